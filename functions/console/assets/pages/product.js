// One product: GET /products/{identifier}?include=variants,skus (the tree in one call),
// GET /products/{identifier}/assets, and its history (`history.js`). Embedded variants and SKUs carry only their own
// attributes (keys `variant.*`, `sku.*`); what they inherit is their ancestors' (`product.*`,
// `variant.*`), the same merge the /variants and /skus endpoints answer, told apart by the
// key's entity prefix.

import * as api from '../api.js';
import { h, replace, errorArea, table, time, badge, code, dl, dash, checkbox } from '../ui.js';
import { entriesNode } from './catalog.js';
import { historySection } from './history.js';

/** Rows of an attributes table: own entries first, then each ancestor's, inherited. */
function attributeRows(own, ancestors) {
  const rows = [];
  const sorted = (attrs) => Object.keys(attrs || {}).sort();
  for (const key of sorted(own)) rows.push({ key, entries: own[key], own: true });
  for (const a of ancestors) {
    for (const key of sorted(a.attributes)) rows.push({ key, entries: a.attributes[key], own: false, from: a });
  }
  return rows;
}

function attributesTable(caption, rows) {
  return table({
    caption: { text: caption, hidden: true },
    empty: 'No attribute has a value.',
    rows,
    rowClass: (r) => (r.own ? 'own' : 'inherited'),
    columns: [
      { label: 'Attribute', cell: (r) => code(r.key) },
      { label: 'Value', class: 'wrap', cell: (r) => entriesNode(r.entries) },
      { label: 'Type', cell: (r) => (r.entries && r.entries[0] ? r.entries[0].type : '') },
      {
        label: 'Source',
        cell: (r) => (r.own
          ? badge('Own', 'own')
          : badge(`Inherited from ${r.from.level} ${r.from.identifier}`, 'inherited')),
      },
    ],
  });
}

function stamps(entity, what) {
  const differs = entity.updatedAt && entity.selfUpdatedAt && entity.updatedAt !== entity.selfUpdatedAt;
  return [
    ['Updated (updatedAt)', h('span', {}, time(entity.updatedAt), h('span', { class: 'hint block' }, `Latest change of the ${what}, its ancestors or anything below it.`))],
    ['Self updated (selfUpdatedAt)', h('span', {}, time(entity.selfUpdatedAt), h('span', { class: 'hint block' }, `Latest change of the ${what}’s own fields.`),
      differs ? h('span', { class: 'note block' }, 'The two differ: the latest change came from elsewhere in the hierarchy.') : null)],
  ];
}

/** One line for a variant or SKU: its two timestamps, and whether they differ. */
function stampLine(entity) {
  const differs = entity.updatedAt && entity.selfUpdatedAt && entity.updatedAt !== entity.selfUpdatedAt;
  return h('p', { class: 'stamps' },
    'Updated ', time(entity.updatedAt), ' · self updated ', time(entity.selfUpdatedAt),
    differs ? h('span', { class: 'note-inline' }, ' (changed since through its hierarchy)') : null);
}

/** An http(s) or data: address as a string, or null (never a javascript: link). */
function safeUrl(url) {
  try {
    const u = new URL(url, window.location.href);
    return ['http:', 'https:', 'data:'].includes(u.protocol) ? u.href : null;
  } catch { return null; }
}

function canPreview(url) {
  try {
    const u = new URL(url, window.location.href);
    return u.protocol === 'https:' || u.protocol === 'data:' || u.origin === window.location.origin;
  } catch { return false; }
}

function assetsNode(assets) {
  if (!assets.length) return h('p', { class: 'empty' }, 'No assets are linked.');
  return h('ul', { class: 'thumbs' }, assets.map((a) => {
    const isImage = String(a.mimeType || '').startsWith('image/');
    const href = safeUrl(a.url);
    const preview = isImage && href && canPreview(a.url)
      ? h('img', { src: a.url, alt: a.name || a.identifier, loading: 'lazy', width: '160', height: '120', decoding: 'async' })
      : h('span', { class: 'thumb-placeholder' }, isImage ? 'No preview (not an https address)' : (a.mimeType || 'file'));
    return h('li', {}, h('figure', { class: 'thumb' }, preview,
      h('figcaption', {}, href ? h('a', { href, rel: 'noopener noreferrer', target: '_blank' }, a.name || a.identifier) : (a.name || a.identifier),
        h('span', { class: 'hint block' }, `${a.identifier} · ${a.mimeType || ''}`))));
  }));
}

export default async function productPage(ctx) {
  const { root, signal, params } = ctx;
  const id = params.identifier;
  const errors = errorArea();
  const path = `products/${api.seg(id)}`;
  const [res, assets] = await Promise.all([
    api.get(path, { query: { include: 'variants,skus' }, signal }),
    api.getAll(`${path}/assets`, { signal, limit: 100, maxPages: 1 }).catch((err) => { errors.show(err); return []; }),
  ]);
  const p = res.result;
  ctx.setTitle(p.name || p.identifier);
  const variants = Array.isArray(p.variants) ? p.variants : [];
  const skuCount = variants.reduce((n, v) => n + (Array.isArray(v.skus) ? v.skus.length : 0), 0);
  const productRef = { level: 'product', identifier: p.identifier, attributes: p.attributes };
  const openSkus = skuCount <= 3;

  const tree = variants.length
    ? h('ul', { class: 'tree', id: 'product-tree', 'aria-label': `Variants and SKUs of ${p.identifier}` }, variants.map((v) => {
      const skus = Array.isArray(v.skus) ? v.skus : [];
      const variantRef = { level: 'variant', identifier: v.identifier, attributes: v.attributes };
      return h('li', { class: 'node node-variant', data: { identifier: v.identifier } },
        h('details', { open: true },
          h('summary', {}, h('h3', { class: 'summary-heading' }, 'Variant ', h('span', { class: 'name' }, v.name), ' ', code(v.identifier)),
            h('span', { class: 'hint' }, ` ${skus.length} SKU${skus.length === 1 ? '' : 's'}`)),
          stampLine(v),
          attributesTable(`Attributes of variant ${v.identifier}`, attributeRows(v.attributes, [productRef])),
          skus.length ? h('ul', { class: 'tree-children' }, skus.map((s) => h('li', { class: 'node node-sku', data: { identifier: s.identifier } },
            h('details', { open: openSkus },
              h('summary', {}, h('h4', { class: 'summary-heading' }, 'SKU ', h('span', { class: 'name' }, s.name), ' ', code(s.identifier))),
              stampLine(s),
              attributesTable(`Attributes of SKU ${s.identifier}`, attributeRows(s.attributes, [variantRef, productRef])))))) : null));
    }))
    : h('p', { class: 'empty' }, 'This product has no variants.');

  const inherited = checkbox('Show inherited values in variants and SKUs', { checked: true, id: 'show-inherited' });
  replace(root,
    h('p', {}, h('a', { href: '#/products' }, '← Products')),
    errors.el,
    dl([
      ['Identifier', code(p.identifier)],
      ['Family', p.familyId ?? dash()],
      p.categories ? ['Categories', p.categories.length ? p.categories.join(', ') : dash()] : null,
      ...stamps(p, 'product'),
    ]),
    h('section', { 'aria-labelledby': 'attrs-h' },
      h('h2', { id: 'attrs-h' }, 'Product attributes'),
      h('p', { class: 'hint' }, 'Own values are set on the entity itself; inherited ones come from its product or variant (the key’s prefix says which).'),
      attributesTable(`Attributes of product ${p.identifier}`, attributeRows(p.attributes, []))),
    h('section', { 'aria-labelledby': 'assets-h' }, h('h2', { id: 'assets-h' }, `Assets (${assets.length})`), assetsNode(assets)),
    h('section', { 'aria-labelledby': 'tree-h', class: 'tree-section' },
      h('h2', { id: 'tree-h' }, 'Variants and SKUs'),
      h('p', { class: 'total', id: 'tree-total' }, `${variants.length} variant${variants.length === 1 ? '' : 's'}, ${skuCount} SKU${skuCount === 1 ? '' : 's'}`),
      variants.length ? inherited.wrap : null,
      tree),
    historySection(path, 'product', signal));
  inherited.input.addEventListener('change', () => {
    root.querySelector('.tree-section').classList.toggle('hide-inherited', !inherited.input.checked);
  });
}
