// The TypeScript client's smoke workflow (tests/tests/clients.rs runs it against the real
// functions): openapi-typescript's types of docs/openapi.yaml with openapi-fetch's client,
// type-checked by tsc before it runs. Upserts a tree, lists it filtered, writes under
// If-Match (and is refused with a stale tag), writes in bulk, reads the errors, and sends a
// webhook's typed body the server refuses.
// CATALOG_URL (the API's base, ending in /v1) and CATALOG_KEY come from the environment.
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const client = createClient<paths>({
  baseUrl: process.env.CATALOG_URL,
  headers: { Authorization: `Bearer ${process.env.CATALOG_KEY}` },
});

function check(ok: boolean, what: string, seen: unknown): void {
  if (!ok) {
    throw new Error(`${what}: ${JSON.stringify(seen)}`);
  }
}

async function main(): Promise<void> {
  const attr = await client.POST("/attributes", {
    body: { key: "brand", displayName: "Brand", targetEntity: "product", type: "text" },
  });
  check(attr.response.status === 201, "define brand", attr.error ?? attr.data);

  const tree = await client.PATCH("/products/{identifier}", {
    params: { path: { identifier: "ts-p1" } },
    body: {
      name: "Oak chair",
      values: { brand: "Acme" },
      variants: [{ identifier: "ts-v1", skus: [{ identifier: "ts-s1" }, { identifier: "ts-s2" }] }],
    },
  });
  check(tree.response.status === 201, "upsert the tree", tree.error ?? tree.data);
  const tag = tree.response.headers.get("etag") ?? "";
  check(tag !== "", "the tree's ETag", tag);

  const search = JSON.stringify({ "product.brand": [{ operator: "EQUALS", value: "Acme" }] });
  const list = await client.GET("/products", {
    params: { query: { search, include: "variants,skus" } },
  });
  check(list.response.status === 200, "the filtered list", list.error ?? list.data);
  const found = list.data?.result ?? [];
  check(found.length === 1 && found[0].identifier === "ts-p1", "one product listed", found);
  const skus = (found[0].variants ?? []).flatMap((v) => (v.skus ?? []).map((s) => s.identifier));
  check(JSON.stringify(skus) === '["ts-s1","ts-s2"]', "its SKUs embedded", skus);

  const renamed = await client.PATCH("/products/{identifier}", {
    params: { path: { identifier: "ts-p1" }, header: { "If-Match": tag } },
    body: { name: "Oak armchair" },
  });
  check(renamed.response.status === 200, "a write under the current tag", renamed.error ?? renamed.data);
  const stale = await client.PATCH("/products/{identifier}", {
    params: { path: { identifier: "ts-p1" }, header: { "If-Match": tag } },
    body: { name: "Lost" },
  });
  check(stale.response.status === 412, "a stale tag refused", stale.error ?? stale.data);
  check(stale.error !== undefined && "error" in stale.error, "412 names the problem", stale.error);

  const bulk = await client.PATCH("/products", {
    body: [
      { identifier: "ts-p2", name: "Pine table" },
      { identifier: "ts-p3", name: "Stool", values: { nowhere: "x" } },
    ],
  });
  check(bulk.response.status === 200, "the bulk call", bulk.error ?? bulk.data);
  const statuses = (bulk.data?.result ?? []).map((line) => line.status);
  check(JSON.stringify(statuses) === "[201,400]", "a status per line", bulk.data);

  const missing = await client.GET("/products/{identifier}", {
    params: { path: { identifier: "ts-none" } },
  });
  check(missing.response.status === 404, "a missing product", missing.error ?? missing.data);
  check(missing.error !== undefined && "error" in missing.error, "404 names the problem", missing.error);
  // POST /webhooks: a typed body; url-or-destination is the server's rule (issue 60)
  const aimless = await client.POST("/webhooks", { body: { topics: ["product.*"] } });
  check(aimless.response.status === 400, "a webhook with neither url nor destination", aimless.error ?? aimless.data);
  check(aimless.error !== undefined && "error" in aimless.error, "400 names the problem", aimless.error);
  console.log("typescript smoke: ok");
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
