#!/usr/bin/env bash
# The peer of `bench --get` (issue 44, item 5): builds aws-samples/serverless-rust-demo's
# `get-product` at a pinned commit into target/peer/, to time beside our `products` function
# (`scripts/bench.sh --products 0 --ingest 0 --get 200 --samples 200 --peer`).
#
# One change is made to the peer, at start-up only: its SDK (aws-sdk-dynamodb 0.7, 2022)
# takes no endpoint from the environment, so the client it builds once is pointed at
# `AWS_ENDPOINT_URL_DYNAMODB` when that is set (DynamoDB Local); and its manifest gets an
# empty `[workspace]`, to build outside ours. Its request path, its
# logging (JSON tracing of every call) and its release profile are the peer's own.
#
# PEER_SRC: a git URL or a local clone (default: the repository on GitHub).
set -euo pipefail
cd "$(dirname "$0")/.."

src="${PEER_SRC:-https://github.com/aws-samples/serverless-rust-demo}"
commit=b63a56bc8c342328177ca941706fd9a5b7981745
dir=target/peer/src
out=target/peer/get-product

if [ ! -d "$dir/.git" ] || [ "$(git -C "$dir" rev-parse HEAD)" != "$commit" ]; then
  rm -rf "$dir"
  git clone -q "$src" "$dir"
  git -C "$dir" checkout -q "$commit"
fi
git -C "$dir" checkout -q -- .

# the endpoint, once, where the peer builds its client (src/utils.rs, get_store)
python3 - "$dir" <<'EOF'
import pathlib, sys
root = pathlib.Path(sys.argv[1])
utils = root / "src/utils.rs"
text = utils.read_text()
old = "    let client = aws_sdk_dynamodb::Client::new(&config);\n    store::DynamoDBStore::new"
new = """    let mut dynamodb = aws_sdk_dynamodb::config::Builder::from(&config);
    if let Ok(url) = std::env::var("AWS_ENDPOINT_URL_DYNAMODB") {
        let uri: lambda_http::http::Uri = url.parse().expect("AWS_ENDPOINT_URL_DYNAMODB");
        dynamodb = dynamodb.endpoint_resolver(aws_sdk_dynamodb::Endpoint::immutable(uri));
    }
    let client = aws_sdk_dynamodb::Client::from_conf(dynamodb.build());
    store::DynamoDBStore::new"""
assert text.count(old) == 1, "the peer's get_store is not as pinned"
utils.write_text(text.replace(old, new))
# built on its own, not as a member of this repository's workspace
manifest = root / "Cargo.toml"
manifest.write_text(manifest.read_text() + "\n[workspace]\n")
EOF

CARGO_TARGET_DIR="$PWD/target/peer/target" cargo build --release --bin get-product \
  --manifest-path "$dir/Cargo.toml"
cp target/peer/target/release/get-product "$out"
echo "built $out"
