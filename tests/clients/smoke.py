"""The Python client's smoke workflow (tests/tests/clients.rs runs it against the real
functions): the client openapi-python-client generates from docs/openapi.yaml (make
clients). Upserts a tree, lists it filtered, writes under If-Match (and is refused with a
stale tag), writes in bulk, and reads the errors. CATALOG_URL (the API's base, ending in
/v1) and CATALOG_KEY come from the environment."""

import json
import os

from catalog_api_client import AuthenticatedClient
from catalog_api_client.api.attributes import post_attributes
from catalog_api_client.api.products import (
    get_products,
    get_products_identifier,
    patch_products,
    patch_products_identifier,
)
from catalog_api_client.models import AttributeCreate, ProductBulkItem, ProductPatch


def check(ok, what, seen):
    if not ok:
        raise SystemExit(f"{what}: {seen!r}")


client = AuthenticatedClient(base_url=os.environ["CATALOG_URL"], token=os.environ["CATALOG_KEY"])

r = post_attributes.sync_detailed(
    client=client,
    body=AttributeCreate.from_dict(
        {"key": "brand", "displayName": "Brand", "targetEntity": "product", "type": "text"}
    ),
)
check(r.status_code == 201, "define brand", r.content)

tree = {
    "name": "Oak chair",
    "values": {"brand": "Acme"},
    "variants": [{"identifier": "py-v1", "skus": [{"identifier": "py-s1"}, {"identifier": "py-s2"}]}],
}
r = patch_products_identifier.sync_detailed("py-p1", client=client, body=ProductPatch.from_dict(tree))
check(r.status_code == 201, "upsert the tree", r.content)
tag = r.headers.get("etag", "")
check(tag != "", "the tree's ETag", r.headers)

search = json.dumps({"product.brand": [{"operator": "EQUALS", "value": "Acme"}]})
r = get_products.sync_detailed(client=client, search=search, include="variants,skus")
check(r.status_code == 200, "the filtered list", r.content)
found = r.parsed.result
check([p.identifier for p in found] == ["py-p1"], "one product listed", r.content)
skus = [s.identifier for v in found[0].variants for s in v.skus]
check(skus == ["py-s1", "py-s2"], "its SKUs embedded", skus)

rename = ProductPatch.from_dict({"name": "Oak armchair"})
r = patch_products_identifier.sync_detailed("py-p1", client=client, body=rename, if_match=tag)
check(r.status_code == 200, "a write under the current tag", r.content)
r = patch_products_identifier.sync_detailed("py-p1", client=client, body=rename, if_match=tag)
check(r.status_code == 412, "a stale tag refused", r.content)
check("error" in json.loads(r.content), "412 names the problem", r.content)

lines = [
    ProductBulkItem.from_dict({"identifier": "py-p2", "name": "Pine table"}),
    ProductBulkItem.from_dict({"identifier": "py-p3", "name": "Stool", "values": {"nowhere": "x"}}),
]
r = patch_products.sync_detailed(client=client, body=lines)
check(r.status_code == 200, "the bulk call", r.content)
check([line["status"] for line in json.loads(r.content)["result"]] == [201, 400], "a status per line", r.content)

r = get_products_identifier.sync_detailed("py-none", client=client)
check(r.status_code == 404, "a missing product", r.content)
check("error" in json.loads(r.content), "404 names the problem", r.content)
print("python smoke: ok")
