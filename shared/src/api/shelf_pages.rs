//! One page of a flat list (assets, categories, bundles, metaobjects of a definition): which
//! resources it holds and how many the list has come from the shelf's warm index
//! (`search/flat/`, through the list engine); only the page's items are read, so a page costs the same at any depth
//! and whatever the shelf holds.

use crate::app::App;
use crate::error::ApiError;
use crate::http::Paging;
use crate::search::flat::{FlatPage, PageQuery, Seek};
use crate::store::flat_lists::Followed;
use crate::store::resources::{ResourceItem, Shelf};
use std::collections::HashMap;

/// The index of `shelf` in `org`.
pub fn followed<'a>(org: &'a str, shelf: Shelf<'a>) -> Followed<'a> {
    Followed::Shelf { org, shelf }
}

/// The page `paging` names, in identifier order, unfiltered.
pub fn by_page(paging: Paging) -> PageQuery<'static> {
    PageQuery {
        floor: None,
        from: Seek::Offset(paging.range(usize::MAX).start),
        limit: paging.limit as usize,
        descending: false,
        filter: None,
    }
}

/// The page `query` selects from the shelf's index (refreshed before), and its items read
/// in one round trip (a BatchGetItem per 100), in index order. A resource deleted since
/// the refresh is left out of the page and of the index.
pub async fn read(
    app: &App,
    org: &str,
    shelf: Shelf<'_>,
    query: &PageQuery<'_>,
) -> Result<(Vec<ResourceItem>, FlatPage), ApiError> {
    let list = followed(org, shelf);
    let mut page = app.lists.flat().page(&list, query);
    let wanted = page.keys.iter().map(|id| shelf.key(org, id)).collect();
    let mut by_id: HashMap<String, ResourceItem> = app
        .store
        .get_resources(wanted)
        .await?
        .into_iter()
        .map(|r| (r.id.clone(), r))
        .collect();
    let mut items = Vec::with_capacity(page.keys.len());
    let mut gone = Vec::new();
    for id in &page.keys {
        match by_id.remove(id) {
            Some(item) => items.push(item),
            None => gone.push(id),
        }
    }
    if !gone.is_empty() {
        page.total -= gone.len();
        app.lists.flat().forget(&list, &gone);
    }
    Ok((items, page))
}

/// `GET` of a whole shelf (categories, bundles): the shelf's index brought up to date,
/// then the page `limit`/`page` name, rendered with `render`.
pub async fn list(
    app: &App,
    call: &crate::app::Call,
    shelf: Shelf<'_>,
    render: impl Fn(&ResourceItem) -> serde_json::Value,
) -> Result<crate::http::ApiResponse, ApiError> {
    let query = &call.query;
    let paging = Paging::from_query(query)?;
    let org = call.org();
    app.lists.flat().refresh(&followed(org, shelf)).await?;
    let (all, page) = read(app, org, shelf, &by_page(paging)).await?;
    Ok(paging.page_response(all.iter().map(render).collect(), page.total))
}
