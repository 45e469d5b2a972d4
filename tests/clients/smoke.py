"""The Python client's smoke workflow (tests/tests/clients.rs runs it against the real
functions): the client openapi-python-client generates from docs/openapi.yaml (make
clients), checked with mypy --strict beside it. Upserts a tree, lists it filtered, writes
under If-Match (and is refused with a stale tag), writes in bulk, reads the errors, and
sends a webhook's typed body the server refuses. CATALOG_URL (the API's base, ending in
/v1) and CATALOG_KEY come from the environment."""

import json
import os

from catalog_api_client import AuthenticatedClient
from catalog_api_client.api.attributes import post_attributes
from catalog_api_client.api.webhooks import post_webhooks
from catalog_api_client.api.products import (
    get_products,
    get_products_identifier,
    patch_products,
    patch_products_identifier,
)
from catalog_api_client.models import (
    AttributeCreate,
    GetProductsResponse200,
    ProductBulkItem,
    ProductPatch,
    WebhookCreate,
)


def check(ok: bool, what: str, seen: object) -> None:
    if not ok:
        raise SystemExit(f"{what}: {seen!r}")


def error_of(content: bytes) -> object:
    """The `error` of an error answer's body (None when it has none)."""
    body = json.loads(content)
    return body.get("error") if isinstance(body, dict) else None


client = AuthenticatedClient(base_url=os.environ["CATALOG_URL"], token=os.environ["CATALOG_KEY"])

defined = post_attributes.sync_detailed(
    client=client,
    body=AttributeCreate.from_dict(
        {"key": "brand", "displayName": "Brand", "targetEntity": "product", "type": "text"}
    ),
)
check(defined.status_code == 201, "define brand", defined.content)

tree = {
    "name": "Oak chair",
    "values": {"brand": "Acme"},
    "variants": [{"identifier": "py-v1", "skus": [{"identifier": "py-s1"}, {"identifier": "py-s2"}]}],
}
upserted = patch_products_identifier.sync_detailed(
    "py-p1", client=client, body=ProductPatch.from_dict(tree)
)
check(upserted.status_code == 201, "upsert the tree", upserted.content)
tag = upserted.headers.get("etag", "")
check(tag != "", "the tree's ETag", upserted.headers)

search = json.dumps({"product.brand": [{"operator": "EQUALS", "value": "Acme"}]})
listed = get_products.sync_detailed(client=client, search=search, include="variants,skus")
check(listed.status_code == 200, "the filtered list", listed.content)
page = listed.parsed
assert isinstance(page, GetProductsResponse200), listed.content
check([p.identifier for p in page.result] == ["py-p1"], "one product listed", listed.content)
variants = page.result[0].variants
check(isinstance(variants, list), "its variants embedded", listed.content)
assert isinstance(variants, list)
skus = [s.identifier for v in variants if isinstance(v.skus, list) for s in v.skus]
check(skus == ["py-s1", "py-s2"], "its SKUs embedded", skus)

rename = ProductPatch.from_dict({"name": "Oak armchair"})
kept = patch_products_identifier.sync_detailed("py-p1", client=client, body=rename, if_match=tag)
check(kept.status_code == 200, "a write under the current tag", kept.content)
stale = patch_products_identifier.sync_detailed("py-p1", client=client, body=rename, if_match=tag)
check(stale.status_code == 412, "a stale tag refused", stale.content)
check(isinstance(error_of(stale.content), str), "412 names the problem", stale.content)

lines = [
    ProductBulkItem.from_dict({"identifier": "py-p2", "name": "Pine table"}),
    ProductBulkItem.from_dict({"identifier": "py-p3", "name": "Stool", "values": {"nowhere": "x"}}),
]
bulk = patch_products.sync_detailed(client=client, body=lines)
check(bulk.status_code == 200, "the bulk call", bulk.content)
statuses = [line["status"] for line in json.loads(bulk.content)["result"]]
check(statuses == [201, 400], "a status per line", bulk.content)

missing = get_products_identifier.sync_detailed("py-none", client=client)
check(missing.status_code == 404, "a missing product", missing.content)
check(isinstance(error_of(missing.content), str), "404 names the problem", missing.content)
# POST /webhooks takes its model (issue 60: it was `Any`); url-or-destination is the server's rule
aimless = post_webhooks.sync_detailed(client=client, body=WebhookCreate(topics=["product.*"]))
check(aimless.status_code == 400, "a webhook with neither url nor destination", aimless.content)
check(isinstance(error_of(aimless.content), str), "400 names the problem", aimless.content)
print("python smoke: ok")
