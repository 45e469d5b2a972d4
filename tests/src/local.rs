//! Local event source mappings: what Lambda does between DynamoDB Streams or SQS and a
//! function, for DynamoDB Local and the SQS emulator. The stream poller reads every shard in
//! order, hands batches to the change-feed function and, on a reported batch item failure,
//! retries from that record (the batch before it is done); a failed invocation (an error,
//! a process that died, no answer within the function's timeout in infra/template.yaml,
//! [`timeout_of`]) is retried from the batch's first record, with backoff. The queue poller
//! receives batches of up to 10 messages, hands them to the delivery function, deletes the
//! ones that succeeded and leaves the reported failures, or the whole batch of a failed
//! invocation, to their visibility timeout, as the SQS event source mapping does, with
//! several pollers at once as its concurrency allows; it carries a chain's trace header to
//! the next invocation and stops a chain Lambda's recursive loop detection would stop
//! (`lineage.rs`). The tests and `make dev` both run them, invoking the functions through
//! the Runtime API emulator (`runtime.rs`), which, as Lambda, replaces a function process
//! that died or outran its timeout.

use aws_sdk_dynamodbstreams::types::{Record, ShardIteratorType};
use aws_sdk_sqs::types::{
    DeleteMessageBatchRequestEntry, MessageSystemAttributeName, QueueAttributeName,
};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Invokes a function by name with a raw event and returns its raw response.
pub type Invoker =
    Arc<dyn Fn(String, Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync>;

/// Where a newly found shard is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Every record the stream still holds (tests: the table is new).
    Oldest,
    /// Only records written from now on, for the shards open at startup (`make dev`).
    Latest,
}

/// Retries of one failing stream batch before its first record is skipped (Lambda's
/// `MaximumRetryAttempts`).
const STREAM_RETRIES: u32 = 20;
const IDLE: Duration = Duration::from_millis(100);
/// The longest wait before a failed stream invocation is tried again (the backoff doubles
/// from [`IDLE`] up to it).
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The change feed mapping's `BatchSize` in infra/template.yaml. Its 1 s
/// `MaximumBatchingWindowInSeconds` is not played here: each page read goes at once (with
/// the window, bigger bursts of SendMessageBatch on moto's SQS, which scans its whole queue
/// on every operation, made the local delivery latency worse: docs/performance.md).
const STREAM_BATCH: usize = 100;

/// Concurrent batches per stream shard: the change feed's `ParallelizationFactor` in
/// infra/template.yaml (checked by tests/tests/crashes.rs); the tests' emulator runs as many
/// change-feed processes.
pub const STREAM_PARALLELIZATION: usize = 4;

/// The event-driven functions' timeouts in infra/template.yaml (seconds; checked by
/// tests/tests/crashes.rs). Every other function has the template's global 10 s.
pub const WORKER_TIMEOUTS: [(&str, u64); 4] = [
    ("change-feed", 60),
    ("webhook-delivery", 30),
    ("import-worker", 120),
    ("checkpoint-builder", 900),
];

/// How long Lambda lets an invocation of `function` (`<binary>@<variant>` as its binary)
/// run before it fails it: its `Timeout` in infra/template.yaml.
pub fn timeout_of(function: &str) -> Duration {
    let binary = function.split_once('@').map_or(function, |(b, _)| b);
    let seconds = WORKER_TIMEOUTS
        .iter()
        .find(|(name, _)| *name == binary)
        .map_or(10, |(_, s)| *s);
    Duration::from_secs(seconds)
}

/// Invokes `function` and fails the invocation when no answer comes within its timeout (a
/// little more: the invoker holds the function to its timeout itself, as Lambda does, and
/// this only guards against an invoker that never answers).
async fn invoke_within(invoke: &Invoker, function: &str, event: Value) -> Result<Value, String> {
    let timeout = timeout_of(function);
    tokio::time::timeout(
        timeout + Duration::from_secs(5),
        invoke(function.into(), event),
    )
    .await
    .unwrap_or_else(|_| Err(format!("no answer within {} s", timeout.as_secs())))
}

/// The table's stream ARN.
pub async fn stream_arn(ddb: &aws_sdk_dynamodb::Client, table: &str) -> String {
    ddb.describe_table()
        .table_name(table)
        .send()
        .await
        .expect("table described")
        .table
        .and_then(|t| t.latest_stream_arn)
        .expect("the table has a stream")
}

/// Polls the table's stream forever, feeding `function`.
pub async fn run_stream(
    client: aws_sdk_dynamodbstreams::Client,
    stream_arn: String,
    function: String,
    invoke: Invoker,
    start: Start,
) {
    // shard id -> next iterator (None once the shard is closed and drained)
    let mut shards: HashMap<String, Option<String>> = HashMap::new();
    // shard id -> sequence number of the last record handed to the function
    let mut done: HashMap<String, String> = HashMap::new();
    let mut first_pass = true;
    loop {
        if let Ok(desc) = client
            .describe_stream()
            .stream_arn(&stream_arn)
            .send()
            .await
        {
            let found = desc
                .stream_description
                .and_then(|d| d.shards)
                .unwrap_or_default();
            for shard in found {
                let Some(id) = shard.shard_id else { continue };
                if shards.contains_key(&id) {
                    continue;
                }
                let kind = if start == Start::Latest && first_pass {
                    ShardIteratorType::Latest
                } else {
                    ShardIteratorType::TrimHorizon
                };
                let iterator = iterator(&client, &stream_arn, &id, kind, None).await;
                shards.insert(id, iterator);
            }
            first_pass = false;
        }
        let mut busy = false;
        // (shard id, lane) -> this pass's batch: a page holds at most BatchSize records, so
        // a lane's never more
        let mut batches: HashMap<(String, usize), Vec<Record>> = HashMap::new();
        for (id, next) in shards.iter_mut() {
            let Some(it) = next.clone() else { continue };
            let Ok(out) = client
                .get_records()
                .shard_iterator(&it)
                .limit(STREAM_BATCH as i32)
                .send()
                .await
            else {
                // expired or unreadable iterator: resume after the last record handed over
                *next = match done.get(id) {
                    Some(seq) => {
                        let after = ShardIteratorType::AfterSequenceNumber;
                        iterator(&client, &stream_arn, id, after, Some(seq)).await
                    }
                    None => {
                        let oldest = ShardIteratorType::TrimHorizon;
                        iterator(&client, &stream_arn, id, oldest, None).await
                    }
                };
                continue;
            };
            let records = out.records.unwrap_or_default();
            *next = out.next_shard_iterator;
            if let Some(seq) = records.last().and_then(sequence) {
                done.insert(id.clone(), seq.to_string());
            }
            busy |= !records.is_empty();
            // the mapping's FilterCriteria: only entity items' records invoke the feed; as
            // its ParallelizationFactor, they go in lanes by partition key (each key's
            // records in order in one)
            for record in records.into_iter().filter(of_entity) {
                let lane = lane_of(&record, STREAM_PARALLELIZATION);
                batches.entry((id.clone(), lane)).or_default().push(record);
            }
        }
        // the lanes' batches run at once
        let fed = batches
            .into_values()
            .map(|batch| feed_batch(batch, &stream_arn, &function, &invoke));
        futures_util::future::join_all(fed).await;
        if !busy {
            tokio::time::sleep(IDLE).await;
        }
    }
}

/// The change feed mapping's `FilterCriteria` in infra/template.yaml: a record invokes the
/// feed only when its new or its old image has a `kind` (an entity item); the feed's own
/// windows, logs and history, tombstones and settings never do.
fn of_entity(record: &Record) -> bool {
    let has_kind = |image: Option<
        &HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>,
    >| { image.and_then(|i| i.get("kind")).is_some_and(|k| k.is_s()) };
    record
        .dynamodb
        .as_ref()
        .is_some_and(|d| has_kind(d.new_image.as_ref()) || has_kind(d.old_image.as_ref()))
}

/// The lane of a stream record among `n`, by its partition key: the records of one key are
/// in one lane, in their order, as Lambda's ParallelizationFactor keeps them.
fn lane_of(record: &Record, n: usize) -> usize {
    use std::hash::{Hash, Hasher};
    let key = record
        .dynamodb
        .as_ref()
        .and_then(|d| d.keys.as_ref())
        .and_then(|k| k.get("PK"))
        .and_then(|v| v.as_s().ok());
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut hasher);
    (hasher.finish() % n.max(1) as u64) as usize
}

/// Feeds one lane's batch to the function until it is done: on a reported batch item
/// failure from that record on, on a failed invocation the whole batch again with backoff,
/// and a record that fails [`STREAM_RETRIES`] times in a row is skipped.
async fn feed_batch(mut batch: Vec<Record>, stream_arn: &str, function: &str, invoke: &Invoker) {
    let mut tries = 0;
    // the wait before the next try after a failed invocation
    let mut backoff = IDLE;
    while !batch.is_empty() {
        let event = stream_event(&batch, stream_arn);
        let t0 = std::time::Instant::now();
        let invoked = invoke_within(invoke, function, event).await;
        if std::env::var("CATALOG_E2E_TRACE").is_ok() {
            eprintln!("[trace] stream {} records {:?}", batch.len(), t0.elapsed());
        }
        let (failed_at, wait) = match invoked {
            Ok(resp) => {
                backoff = IDLE;
                let at = first_failure(&resp)
                    .and_then(|seq| batch.iter().position(|r| sequence(r) == Some(seq.as_str())));
                (at, IDLE)
            }
            // the whole batch again, from its first record, later each time
            Err(e) => {
                eprintln!("[local] {function} failed: {e}; retrying in {backoff:?}");
                let wait = backoff;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                (Some(0), wait)
            }
        };
        let Some(i) = failed_at else { break };
        tries += 1;
        if tries > STREAM_RETRIES {
            eprintln!("[local] skipping a stream record after {STREAM_RETRIES} retries");
            batch.drain(..=i);
            tries = 0;
        } else {
            batch.drain(..i);
            tokio::time::sleep(wait).await;
        }
    }
}

async fn iterator(
    client: &aws_sdk_dynamodbstreams::Client,
    arn: &str,
    shard: &str,
    kind: ShardIteratorType,
    sequence: Option<&str>,
) -> Option<String> {
    client
        .get_shard_iterator()
        .stream_arn(arn)
        .shard_id(shard)
        .shard_iterator_type(kind)
        .set_sequence_number(sequence.map(str::to_string))
        .send()
        .await
        .ok()
        .and_then(|o| o.shard_iterator)
}

fn sequence(r: &Record) -> Option<&str> {
    r.dynamodb.as_ref()?.sequence_number.as_deref()
}

/// The `itemIdentifier` of the first reported failure.
fn first_failure(response: &Value) -> Option<String> {
    response["batchItemFailures"]
        .as_array()?
        .first()?
        .get("itemIdentifier")?
        .as_str()
        .map(str::to_string)
}

fn image(image: &Option<HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>>) -> Value {
    match image {
        Some(i) => serde_json::to_value(serde_dynamo::Item::from(i.clone())).unwrap_or(Value::Null),
        None => Value::Null,
    }
}

/// The Lambda event for a batch of stream records, as the DynamoDB event source sends it.
pub fn stream_event(records: &[Record], stream_arn: &str) -> Value {
    let records: Vec<Value> = records
        .iter()
        .map(|r| {
            let d = r.dynamodb.as_ref();
            json!({
                "eventID": r.event_id,
                "eventName": r.event_name.as_ref().map(|n| n.as_str()),
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": r.aws_region.as_deref().unwrap_or("us-east-1"),
                "dynamodb": {
                    "ApproximateCreationDateTime": d
                        .and_then(|d| d.approximate_creation_date_time)
                        .map(|t| t.as_secs_f64())
                        .unwrap_or_default(),
                    "Keys": image(&d.and_then(|d| d.keys.clone())),
                    "NewImage": image(&d.and_then(|d| d.new_image.clone())),
                    "OldImage": image(&d.and_then(|d| d.old_image.clone())),
                    "SequenceNumber": d.and_then(|d| d.sequence_number.clone()),
                    "SizeBytes": d.and_then(|d| d.size_bytes).unwrap_or_default(),
                    "StreamViewType": "NEW_AND_OLD_IMAGES"
                },
                "eventSourceARN": stream_arn
            })
        })
        .collect();
    json!({ "Records": records })
}

/// Creates (or finds) the delivery queue and its dead-letter queue, shaped like the
/// template's: a redrive policy as a safety net, a 30 s visibility timeout. Returns their URLs.
pub async fn create_delivery_queues(sqs: &aws_sdk_sqs::Client) -> Result<(String, String), String> {
    let create = |name: &'static str, attributes: Vec<(QueueAttributeName, String)>| {
        let mut req = sqs.create_queue().queue_name(name);
        for (k, v) in attributes {
            req = req.attributes(k, v);
        }
        async move {
            req.send()
                .await
                .map_err(|e| format!("CreateQueue {name}: {e:?}"))?
                .queue_url
                .ok_or_else(|| format!("CreateQueue {name}: no url"))
        }
    };
    let dead_letter_url = create("deliveries-dlq", vec![]).await?;
    let dlq_arn = queue_arn(sqs, &dead_letter_url).await?;
    let redrive = format!(r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"100"}}"#);
    let queue_url = create(
        "deliveries",
        vec![
            (QueueAttributeName::VisibilityTimeout, "30".into()),
            (QueueAttributeName::RedrivePolicy, redrive),
        ],
    )
    .await?;
    Ok((queue_url, dead_letter_url))
}

/// A queue's ARN.
pub async fn queue_arn(sqs: &aws_sdk_sqs::Client, queue_url: &str) -> Result<String, String> {
    sqs.get_queue_attributes()
        .queue_url(queue_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| format!("GetQueueAttributes: {e:?}"))?
        .attributes
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .ok_or_else(|| format!("{queue_url} has no ARN"))
}

/// Invokes functions through the test stack's Runtime API emulator, each held to its
/// timeout ([`timeout_of`]) as Lambda holds it.
pub fn emulator_invoker() -> Invoker {
    Arc::new(|function, event| {
        Box::pin(async move {
            let timeout = timeout_of(&function);
            crate::stack()
                .await
                .runtime
                .try_invoke_within(&function, event, timeout)
                .await
        })
    })
}

/// The import bucket and queue, wired as the template wires them: every object created under
/// `imports/` notifies the queue. `visibility` is the queue's visibility timeout (seconds).
/// Returns the queue's URL.
pub async fn create_import_resources(
    sqs: &aws_sdk_sqs::Client,
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    visibility: u32,
) -> Result<String, String> {
    use aws_sdk_s3::types::{
        Event, FilterRule, FilterRuleName, NotificationConfiguration,
        NotificationConfigurationFilter, QueueConfiguration, S3KeyFilter,
    };
    let queue_url = sqs
        .create_queue()
        .queue_name(format!("{bucket}-queue"))
        .attributes(
            QueueAttributeName::VisibilityTimeout,
            visibility.to_string(),
        )
        .send()
        .await
        .map_err(|e| format!("CreateQueue: {e:?}"))?
        .queue_url
        .ok_or("no queue URL")?;
    let arn = queue_arn(sqs, &queue_url).await?;
    // An existing bucket (a restarted `make dev`) is fine.
    let _ = s3.create_bucket().bucket(bucket).send().await;
    let prefix = FilterRule::builder()
        .name(FilterRuleName::Prefix)
        .value("imports/")
        .build();
    let queue = QueueConfiguration::builder()
        .queue_arn(arn)
        .events(Event::from("s3:ObjectCreated:*"))
        .filter(
            NotificationConfigurationFilter::builder()
                .key(S3KeyFilter::builder().filter_rules(prefix).build())
                .build(),
        )
        .build()
        .map_err(|e| e.to_string())?;
    // As the template's bucket: the console's browser uploads with PUT from its own origin.
    let cors = aws_sdk_s3::types::CorsRule::builder()
        .allowed_methods("PUT")
        .allowed_origins("*")
        .allowed_headers("*")
        .max_age_seconds(3600)
        .build()
        .map_err(|e| e.to_string())?;
    s3.put_bucket_cors()
        .bucket(bucket)
        .cors_configuration(
            aws_sdk_s3::types::CorsConfiguration::builder()
                .cors_rules(cors)
                .build()
                .map_err(|e| e.to_string())?,
        )
        .send()
        .await
        .map_err(|e| format!("PutBucketCors: {e:?}"))?;
    s3.put_bucket_notification_configuration()
        .bucket(bucket)
        .notification_configuration(
            NotificationConfiguration::builder()
                .queue_configurations(queue)
                .build(),
        )
        .send()
        .await
        .map_err(|e| format!("PutBucketNotificationConfiguration: {e:?}"))?;
    Ok(queue_url)
}

/// The event an EventBridge schedule hands its target (`detail-type` "Scheduled Event").
pub fn scheduled_event() -> Value {
    json!({
        "version": "0",
        "id": format!("local-{}", chrono::Utc::now().timestamp_millis()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "000000000000",
        "time": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:000000000000:rule/local-schedule"],
        "detail": {}
    })
}

/// Invokes `function` with a scheduled event every `every`, forever, as the template's
/// schedule rule does (the checkpoint builder); a failed run is logged and the next one
/// comes on time.
pub async fn run_schedule(function: String, every: Duration, invoke: Invoker) {
    loop {
        tokio::time::sleep(every).await;
        if let Err(e) = invoke_within(&invoke, &function, scheduled_event()).await {
            eprintln!("[local-poller] {function}: {e}");
        }
    }
}

/// Polls a queue forever with `concurrency` pollers, each feeding `function` batches of up
/// to 10 messages and waiting for the answer, as the SQS event source mapping does with
/// its `MaximumConcurrency`.
pub async fn run_queue(
    client: aws_sdk_sqs::Client,
    queue_url: String,
    function: String,
    invoke: Invoker,
    concurrency: usize,
) {
    let arn = queue_arn(&client, &queue_url).await.unwrap_or_default();
    let pollers =
        (0..concurrency.max(1)).map(|_| poll_queue(&client, &queue_url, &function, &invoke, &arn));
    futures_util::future::join_all(pollers).await;
}

/// One poller of [`run_queue`].
async fn poll_queue(
    client: &aws_sdk_sqs::Client,
    queue_url: &str,
    function: &str,
    invoke: &Invoker,
    arn: &str,
) {
    let trace = std::env::var("CATALOG_E2E_TRACE").is_ok();
    loop {
        let r0 = std::time::Instant::now();
        let received = client
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await;
        let messages = match received {
            Ok(out) => out.messages.unwrap_or_default(),
            Err(_) => {
                tokio::time::sleep(IDLE).await;
                continue;
            }
        };
        if trace {
            trace_receive(&messages, r0.elapsed());
        }
        if !messages.is_empty() {
            handle_messages(client, queue_url, function, invoke, arn, messages).await;
        }
    }
}

/// Prints how long a receive took and how long after its send each message came (its
/// delay included).
fn trace_receive(messages: &[aws_sdk_sqs::types::Message], took: Duration) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let waited: Vec<i64> = messages
        .iter()
        .filter_map(|m| {
            let sent = m
                .attributes
                .as_ref()?
                .get(&MessageSystemAttributeName::SentTimestamp)?;
            Some(now - sent.parse::<i64>().ok()?)
        })
        .collect();
    eprintln!(
        "[trace] receive {} msgs {took:?}, sent {waited:?} ms before",
        messages.len()
    );
}

/// One batch of [`run_queue`]: the invocation, then the deletion of what succeeded.
async fn handle_messages(
    client: &aws_sdk_sqs::Client,
    queue_url: &str,
    function: &str,
    invoke: &Invoker,
    arn: &str,
    messages: Vec<aws_sdk_sqs::types::Message>,
) {
    let records: Vec<Value> = messages
        .iter()
        .map(|m| {
            let attributes: HashMap<String, String> = m
                .attributes
                .clone()
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k.as_str().to_string(), v))
                .collect();
            json!({
                "messageId": m.message_id,
                "receiptHandle": m.receipt_handle,
                "body": m.body,
                "attributes": attributes,
                "messageAttributes": {},
                "md5OfBody": m.md5_of_body,
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
                "awsRegion": "us-east-1"
            })
        })
        .collect();
    let event = json!({ "Records": records });
    // Lambda's recursive loop detection: a chain past 16 invocations of a function whose
    // RecursiveLoop is Terminate is not invoked; its messages are dropped.
    if !crate::lineage::admit(function, &event) {
        delete_batch(client, queue_url, messages.iter()).await;
        return;
    }
    let t0 = std::time::Instant::now();
    let invoked = invoke_within(invoke, function, event).await;
    if std::env::var("CATALOG_E2E_TRACE").is_ok() {
        eprintln!(
            "[trace] {function} {} msgs {:?}",
            messages.len(),
            t0.elapsed()
        );
    }
    let failed: Vec<String> = match invoked {
        Ok(resp) => resp["batchItemFailures"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|f| f["itemIdentifier"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        Err(e) => {
            // the whole batch returns after the queue's visibility timeout
            eprintln!("[local] {function} failed: {e}");
            return;
        }
    };
    // the ones that succeeded, in one DeleteMessageBatch, as the event source mapping does
    let done = messages.iter().filter(|m| {
        !failed
            .iter()
            .any(|f| Some(f.as_str()) == m.message_id.as_deref())
    });
    delete_batch(client, queue_url, done).await;
}

/// Deletes up to 10 received messages in one DeleteMessageBatch.
async fn delete_batch<'a>(
    client: &aws_sdk_sqs::Client,
    queue_url: &str,
    messages: impl Iterator<Item = &'a aws_sdk_sqs::types::Message>,
) {
    let entries: Vec<DeleteMessageBatchRequestEntry> = messages
        .enumerate()
        .filter_map(|(i, m)| {
            DeleteMessageBatchRequestEntry::builder()
                .id(i.to_string())
                .receipt_handle(m.receipt_handle.clone()?)
                .build()
                .ok()
        })
        .collect();
    if !entries.is_empty() {
        let _ = client
            .delete_message_batch()
            .queue_url(queue_url)
            .set_entries(Some(entries))
            .send()
            .await;
    }
}
