//! Every limit a request meets, in one place: the numbers the code checks and the table the
//! README and the OpenAPI document show (a test keeps the README's copy equal to it).

/// Variants one product holds.
pub const MAX_VARIANTS_PER_PRODUCT: usize = 100;
/// SKUs one product holds, over all its variants.
pub const MAX_SKUS_PER_PRODUCT: usize = 500;
/// Attribute keys in one entity's `values` object.
pub const MAX_VALUES_PER_ENTITY: usize = 300;
/// Distinct attribute keys one write names over all its entities (each is one definition
/// read: at most five BatchGetItem requests).
pub const MAX_ATTRIBUTE_KEYS_PER_WRITE: usize = 500;
/// Most items one bulk request (or one import batch) holds (decisions.md).
pub const MAX_BULK_ITEMS: usize = 1000;
/// Variants and SKUs one bulk request (or one import batch) writes in all.
pub const MAX_BULK_ENTITIES: usize = 5_000;
/// Filters (keys) in one `search`.
pub const MAX_SEARCH_KEYS: usize = 20;
/// Conditions of one filter key.
pub const MAX_SEARCH_CONDITIONS: usize = 10;
/// Values of one `IN` / `NOT_IN` condition.
pub const MAX_IN_VALUES: usize = 100;
/// Characters of one text value a `search` condition compares (`CONTAINS`, `EQUALS`, each
/// `IN` value): every operator's work is linear in it, and the change feed runs it on every
/// change a filtered subscription sees.
pub const MAX_SEARCH_TEXT_CHARS: usize = 1_000;
/// Variants and SKUs one list page embeds with `include`.
pub const MAX_EMBEDDED_PER_PAGE: usize = 5_000;
/// Bytes a page's entries take of its answer (`http/answer_size.rs`): 6,000,000 bytes of
/// Lambda's answer less 1,000,000 for the rest.
pub const MAX_PAGE_ENTRY_BYTES: usize = 5_000_000;

/// Attribute definitions per organization.
pub const MAX_ATTRIBUTES: usize = 2_000;
/// Families per organization.
pub const MAX_FAMILIES: usize = 1_000;
/// Completeness profiles per organization.
pub const MAX_PROFILES: usize = 100;
/// Metaobject definitions per organization.
pub const MAX_METAOBJECT_DEFINITIONS: usize = 100;
/// Webhook subscriptions to one receiver: an HTTPS URL's scheme, host and port, or one
/// queue or bus.
pub const MAX_WEBHOOKS_PER_URL: usize = 5;
/// Delivery replays per organization and hour.
pub const MAX_REPLAYS_PER_HOUR: usize = 1_000;
/// Bulk writes of one organization running at once, over the whole fleet.
pub const MAX_CONCURRENT_BULK_WRITES: u32 = 4;
/// Import runs of one organization at once, over the whole fleet (its other imports wait).
pub const MAX_RUNNING_IMPORTS: u32 = 1;
/// Exports of one organization running at once, over the whole fleet (decisions.md).
pub const MAX_RUNNING_EXPORTS: u32 = 2;
/// Entries one entity's history keeps: the change feed deletes the oldest beyond it.
pub const MAX_HISTORY_ENTRIES: u64 = 1_000;
/// How long history is kept, in days: the organization's `historyRetentionDays` setting
/// is one of these (the longest is the default).
pub const HISTORY_RETENTION_DAYS: std::ops::RangeInclusive<u32> = 1..=90;

/// One row of the limits table: what is limited, the limit, and the answer beyond it.
pub struct Limit {
    pub what: &'static str,
    pub limit: &'static str,
    pub answer: &'static str,
}

const fn row(what: &'static str, limit: &'static str, answer: &'static str) -> Limit {
    Limit {
        what,
        limit,
        answer,
    }
}

/// The limits table (README "Limits", OpenAPI `info.description`). The numbers in the
/// texts are the constants above (a unit test checks them).
pub const LIMITS: &[Limit] = &[
    row(
        "Identifier (any entity or resource)",
        "1 to 255 characters and at most 300 bytes of UTF-8",
        "400",
    ),
    row(
        "Name of a product, variant or SKU (and every display name)",
        "1 to 255 characters, not blank, no control characters",
        "400",
    ),
    row(
        "Request body",
        "1 MiB (bulk `PATCH /products`: 6 MiB)",
        "413",
    ),
    row("Items of one bulk `PATCH /products`", "1,000", "413"),
    row(
        "Variants and SKUs of one bulk `PATCH /products` (or import batch), in all",
        "5,000",
        "413",
    ),
    row("Variants of one product", "100", "400"),
    row("SKUs of one product (over all its variants)", "500", "400"),
    row("Attribute keys in one `values` object", "300", "400"),
    row("Distinct attribute keys one write names", "500", "400"),
    row(
        "Assets linked to one product; categories of one product",
        "100 each",
        "400",
    ),
    row(
        "Stored size of one entity (its values, names and keys)",
        "400 KB, as DynamoDB counts it",
        "400",
    ),
    row(
        "`search`: filter keys / conditions per key / `IN` values / characters of one value",
        "20 / 10 / 100 / 1,000",
        "400",
    ),
    row(
        "Variants and SKUs embedded in one list page (`include`)",
        "5,000",
        "400",
    ),
    row("`limit` on lists", "1 to 200 (default 100)", "400"),
    row(
        "Bytes of the entries of one page of `/products`, `/variants`, `/skus`, `/assets`, `/deletions`, `/exports`, as the answer counts them (Lambda answers at most 6 MB)",
        "5,000,000",
        "a page by `cursor` ends early, its `nextCursor` going on; a numbered page: 400 with the `limit` that fits",
    ),
    row("API keys / webhook subscriptions / subscriptions to one receiver (an HTTPS URL's scheme, host and port; a queue; a bus), per organization", "100 / 50 / 5", "409"),
    row("Attribute definitions / families / completeness profiles / metaobject definitions, per organization", "2,000 / 1,000 / 100 / 100", "409"),
    row("Languages / channels, per organization", "200 / 200", "400"),
    row("Delivery replays and test events, per organization and hour", "1,000", "429 with `Retry-After`"),
    row("Bulk `PATCH /products` running at once, per organization", "4", "429 with `Retry-After`"),
    row("Imports running at once, per organization", "1 (the others wait their turn)", "—"),
    row("Exports running at once, per organization", "2", "429 with `Retry-After`"),
    row(
        "Entries one history keeps (a product's, variant's, SKU's or asset's)",
        "1,000",
        "— (the change feed deletes the oldest)",
    ),
    row(
        "`historyRetentionDays`, how long history is kept (`PATCH /settings`)",
        "1 to 90 days (default 90)",
        "400",
    ),
    row("Calls per organization (every key and function together; a bulk write costs 1 per 10 lines)", "100 per second, bursts of 200 (deployment defaults; `catalog-admin set-limits` per organization)", "429 with `Retry-After`"),
    row(
        "Attribute keys (`values`, `search`, definitions)",
        "`[a-z][a-z0-9_]{0,63}`",
        "400",
    ),
    row(
        "`cursor`",
        "only as handed out (sealed; its position at most 400 bytes)",
        "400",
    ),
];

/// The table as Markdown (README "Limits" and the OpenAPI description).
pub fn markdown() -> String {
    let mut out = String::from("| What | Limit | Beyond it |\n|---|---|---|\n");
    for l in LIMITS {
        out.push_str(&format!("| {} | {} | {} |\n", l.what, l.limit, l.answer));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grouped(n: usize) -> String {
        let s = n.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    }

    #[test]
    fn the_table_shows_the_numbers_the_code_checks() {
        let limit = |what: &str| {
            LIMITS
                .iter()
                .find(|l| l.what.starts_with(what))
                .map(|l| l.limit)
                .unwrap_or_else(|| panic!("no row for {what}"))
        };
        assert_eq!(
            limit("Variants of one product"),
            grouped(MAX_VARIANTS_PER_PRODUCT)
        );
        assert_eq!(limit("SKUs of one product"), grouped(MAX_SKUS_PER_PRODUCT));
        assert_eq!(
            limit("Attribute keys in one"),
            grouped(MAX_VALUES_PER_ENTITY)
        );
        assert_eq!(
            limit("Distinct attribute keys"),
            grouped(MAX_ATTRIBUTE_KEYS_PER_WRITE)
        );
        assert_eq!(limit("Items of one bulk"), grouped(MAX_BULK_ITEMS));
        assert_eq!(
            limit("Variants and SKUs of one bulk"),
            grouped(MAX_BULK_ENTITIES)
        );
        assert_eq!(
            limit("Variants and SKUs embedded"),
            grouped(MAX_EMBEDDED_PER_PAGE)
        );
        assert_eq!(
            limit("`search`"),
            format!(
                "{MAX_SEARCH_KEYS} / {MAX_SEARCH_CONDITIONS} / {MAX_IN_VALUES} / {}",
                grouped(MAX_SEARCH_TEXT_CHARS)
            )
        );
        assert_eq!(
            limit("Bulk `PATCH /products` running at once"),
            MAX_CONCURRENT_BULK_WRITES.to_string()
        );
        assert!(limit("Imports running at once").starts_with(&format!("{MAX_RUNNING_IMPORTS} ")));
        assert_eq!(
            limit("Exports running at once"),
            MAX_RUNNING_EXPORTS.to_string()
        );
        assert_eq!(
            limit("Entries one history keeps"),
            grouped(MAX_HISTORY_ENTRIES as usize)
        );
        let (shortest, longest) = HISTORY_RETENTION_DAYS.into_inner();
        assert_eq!(
            limit("`historyRetentionDays`"),
            format!("{shortest} to {longest} days (default {longest})")
        );
    }

    /// The table as Markdown, as README.md carries it.
    #[test]
    fn renders_as_markdown() {
        assert!(markdown().starts_with("| What | Limit | Beyond it |\n|---|---|---|\n| Identifier"));
    }
}
