#!/usr/bin/env python3
"""A queue of `make dev`'s AWS emulator for AWS destinations (docs/webhooks.md): `create NAME`
prints its URL, `read NAME` prints and deletes what arrived (one JSON body a line).
Runs on the emulator's boto3: .tools/venv/bin/python scripts/local-sqs.py create events
The endpoint is $AWS_ENDPOINT_URL_SQS, as `make dev` prints it."""
import json
import os
import sys

import boto3

ACCOUNT = "123456789012"


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in ("create", "read"):
        sys.exit("usage: local-sqs.py create|read NAME")
    verb, name = sys.argv[1:]
    sqs = boto3.client(
        "sqs",
        endpoint_url=os.environ.get("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:9324"),
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    if verb == "create":
        attributes = {"FifoQueue": "true"} if name.endswith(".fifo") else {}
        print(sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"])
        return
    url = sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=ACCOUNT)["QueueUrl"]
    while True:
        out = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        messages = out.get("Messages", [])
        if not messages:
            return
        for m in messages:
            print(json.dumps(json.loads(m["Body"])))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


if __name__ == "__main__":
    main()
