// Catalog explorer: GET /products, /variants or /skus with `search` (the spec's JSON filter,
// built from conditions on attributes of GET /attributes and the system filters),
// `search_mode`, `limit` and `page`; totals from the list envelope's `pagination`. The
// state lives in the hash's query, so a filtered list can be bookmarked and reloaded.

import * as api from '../api.js';
import { operatorMatrix } from '../document.js';
import {
  h, replace, announce, errorArea, table, pager, field, option, time, dash, uid, focusIn,
} from '../ui.js';
import { hrefOf, setQuery } from '../router.js';

const OP_LABEL = {
  EQUALS: 'equals', NOT_EQUALS: 'does not equal', CONTAINS: 'contains', NOT_CONTAINS: 'does not contain',
  IN: 'is one of', NOT_IN: 'is none of', EMPTY: 'is empty', NOT_EMPTY: 'is not empty',
  GREATER_THAN: 'is greater than', LESS_THAN: 'is less than', BEFORE: 'is before', AFTER: 'is after',
  IN_THE_LAST: 'is in the last', NOT_IN_THE_LAST: 'is not in the last',
};
const NO_VALUE = new Set(['EMPTY', 'NOT_EMPTY']);
const LIST_VALUE = new Set(['IN', 'NOT_IN']);
const DURATION = new Set(['IN_THE_LAST', 'NOT_IN_THE_LAST']);

/** The built-in fields the spec allows filtering on. */
const SYSTEM_FILTERS = [
  { key: '_identifier', name: 'Identifier', type: 'text' },
  { key: '_updated_at', name: 'Updated at (hierarchy)', type: 'datetime' },
  { key: '_family', name: 'Family id', type: '_family' },
];

const ENTITY = {
  products: { noun: 'products', one: 'product' },
  variants: { noun: 'variants', one: 'variant' },
  skus: { noun: 'SKUs', one: 'SKU' },
};

// --- attribute values (shared with the product page) --------------------------------

/** The readable form of an entry's `data` (never its raw `value`). */
export function formatData(data) {
  if (data === null || data === undefined) return '';
  if (Array.isArray(data)) return data.map(formatData).join(', ');
  if (typeof data === 'boolean') return data ? 'Yes' : 'No';
  if (typeof data === 'object') {
    if ('amount' in data && 'currency' in data) return `${data.amount} ${data.currency}`;
    if ('value' in data && 'unit' in data) return `${data.value} ${data.unit}`;
    return JSON.stringify(data);
  }
  return String(data);
}

/** The entries of one attribute: each value with its locale and channel when scoped. */
export function entriesNode(entries) {
  const list = Array.isArray(entries) ? entries : [];
  const one = (e) => {
    const scope = [e.locale, e.channel].filter(Boolean).join(' · ');
    const swatch = e.type === 'color' && /^#[0-9a-f]{6}$/i.test(String(e.data))
      ? h('span', { class: 'swatch', 'aria-hidden': 'true' }) : null;
    if (swatch) swatch.style.backgroundColor = String(e.data);
    return h('span', { class: 'entry' }, swatch, scope ? h('span', { class: 'scope' }, `${scope}: `) : null,
      formatData(e.data), e.metaobjectDefinition ? h('span', { class: 'muted' }, ` (${e.metaobjectDefinition})`) : null);
  };
  if (list.length === 1) return one(list[0]);
  return h('ul', { class: 'plain-list' }, list.map((e) => h('li', {}, one(e))));
}

// --- the filter builder ---------------------------------------------------------------

function convert(raw, type) {
  const s = String(raw).trim();
  if (type === 'number' || type === '_family') return s === '' || Number.isNaN(Number(s)) ? s : Number(s);
  if (type === 'price' || type === 'weight') return /^-?\d+(\.\d+)?$/.test(s) ? Number(s) : s;
  if (type === 'boolean') return s === 'true' ? true : s === 'false' ? false : s;
  return s;
}

/** The operators the API accepts for `def` (`x-operators` of its document), none unknown. */
function operatorsOf(matrix, def) {
  const ops = def.key.startsWith('_') ? matrix.system[def.key] : matrix.types[def.type];
  return ops || [];
}

function conditionRow(defs, byKey, matrix, init, onRemove) {
  const n = uid('cond');
  const attr = field('Attribute', { name: 'attribute', class: 'cond-attr' }, { tag: 'select' });
  const groups = [
    ['Built-in fields', SYSTEM_FILTERS],
    ['Product attributes', defs.filter((d) => d.key.startsWith('product.'))],
    ['Variant attributes', defs.filter((d) => d.key.startsWith('variant.'))],
    ['SKU attributes', defs.filter((d) => d.key.startsWith('sku.'))],
  ];
  for (const [label, list] of groups) {
    if (!list.length) continue;
    attr.input.append(h('optgroup', { label }, list.map((d) => option(d.key, `${d.name || d.key} (${d.key}) · ${d.type === '_family' ? 'number' : d.type}`, d.key === init.key))));
  }
  const op = field('Operator', { name: 'operator', class: 'cond-op' }, { tag: 'select' });
  const listId = `${n}-options`;
  const value = field('Value', { name: 'value', class: 'cond-value', autocomplete: 'off', list: listId }, { hint: ' ' });
  const datalist = h('datalist', { id: listId });
  value.wrap.append(datalist);
  const hint = value.wrap.querySelector('.hint');
  const remove = h('button', { type: 'button', class: 'btn btn-secondary btn-small remove' }, 'Remove');
  const fs = h('fieldset', { class: 'condition' }, h('legend', {}, 'Condition'), attr.wrap, op.wrap, value.wrap, h('div', { class: 'remove-wrap' }, remove));

  function syncOperators(keep) {
    const def = byKey.get(attr.input.value) || SYSTEM_FILTERS[0];
    const ops = operatorsOf(matrix, def);
    const current = keep && ops.includes(keep) ? keep : ops[0];
    replace(op.input, ops.map((o) => option(o, OP_LABEL[o] || o, o === current)));
    replace(datalist, def.type === 'boolean' ? ['true', 'false'].map((o) => option(o)) : (def.options || []).map((o) => option(o)));
    syncValue();
  }
  function syncValue() {
    const def = byKey.get(attr.input.value) || SYSTEM_FILTERS[0];
    const o = op.input.value;
    value.wrap.hidden = NO_VALUE.has(o);
    value.input.disabled = NO_VALUE.has(o);
    value.input.type = def.type === 'number' && !LIST_VALUE.has(o) ? 'number' : 'text';
    if (value.input.type === 'number') value.input.step = 'any';
    let text = '';
    if (LIST_VALUE.has(o)) text = 'Several values, separated by commas.';
    else if (DURATION.has(o)) text = 'A duration such as 7d, 24h or 30m.';
    else if (def.type === 'datetime') text = 'An RFC 3339 time, such as 2026-01-31T00:00:00Z.';
    else if (def.type === 'price') text = 'An amount, such as 12.5, or with its currency: 12.5 EUR.';
    else if (def.type === 'weight') text = 'A number of grams, or with its unit: 1.5 kg.';
    else if (def.type === 'boolean') text = 'true or false.';
    else if (def.type === '_family') text = 'A family id (a number).';
    hint.textContent = text;
  }
  attr.input.addEventListener('change', () => syncOperators(op.input.value));
  op.input.addEventListener('change', syncValue);
  remove.addEventListener('click', () => onRemove(fs));
  if (init.value !== undefined) value.input.value = Array.isArray(init.value) ? init.value.join(', ') : String(init.value);
  syncOperators(init.operator);

  return {
    el: fs,
    focus: () => attr.input.focus(),
    /** [key, {operator, value?}] or an Error naming what is missing. */
    read() {
      const key = attr.input.value;
      const def = byKey.get(key) || { type: 'text' };
      const operator = op.input.value;
      if (NO_VALUE.has(operator)) return [key, { operator }];
      const raw = value.input.value;
      if (!raw.trim()) return new Error(`Give a value for ${key} (${OP_LABEL[operator] || operator}).`);
      const val = LIST_VALUE.has(operator)
        ? raw.split(',').map((s) => s.trim()).filter(Boolean).map((s) => convert(s, def.type))
        : DURATION.has(operator) ? raw.trim() : convert(raw, def.type);
      return [key, { operator, value: val }];
    },
  };
}

/**
 * What the filter builder offers, read together: {defs} the attribute definitions (GET
 * /attributes; none without catalog:read) and {operators} the API document's operator
 * matrix. What cannot be read is empty, and its error goes to `onError` when given.
 */
export async function filterChoices(signal, onError) {
  const failed = (empty) => (err) => { if (onError) onError(err); return empty; };
  const [defs, operators] = await Promise.all([
    api.getAll('attributes', { signal }).catch(failed([])),
    operatorMatrix(signal).catch(failed({ types: {}, system: {} })),
  ]);
  return { defs, operators };
}

/**
 * The filter builder: condition rows on the catalog's attributes and the built-in fields,
 * each with the operators the API declares for it, and the search mode (`choices` is
 * filterChoices()'s). The explorer's form and a webhook's `filter` both use it. `search` and
 * `mode` fill it in. Returns {rowsBox, addButton, mode, read(), clear()}: read() is {search
 * (null when there are no conditions), mode} or an Error.
 */
export function filterBuilder({ defs, operators }, {
  search = null, mode = 'all', addId = 'add-condition', modeId = 'search-mode', modeName = 'search_mode',
} = {}) {
  const catalogDefs = defs.filter((d) => /^(product|variant|sku)\./.test(d.key)).sort((a, b) => a.key.localeCompare(b.key));
  const byKey = new Map([...SYSTEM_FILTERS, ...catalogDefs].map((d) => [d.key, d]));
  const rowsBox = h('div', { class: 'conditions' });
  const rows = [];
  const removeRow = (el) => {
    const i = rows.findIndex((r) => r.el === el);
    if (i >= 0) rows.splice(i, 1);
    el.remove();
    renumber();
    addButton.focus();
  };
  const renumber = () => rows.forEach((r, i) => { r.el.querySelector('legend').textContent = `Condition ${i + 1}`; });
  const addRow = (init = {}) => {
    const row = conditionRow(catalogDefs, byKey, operators, init, removeRow);
    rows.push(row);
    rowsBox.append(row.el);
    renumber();
    return row;
  };
  const addButton = h('button', { type: 'button', class: 'btn btn-secondary', id: addId }, 'Add condition');
  addButton.addEventListener('click', () => addRow().focus());
  const modeField = field('Match', { name: modeName, id: modeId }, {
    tag: 'select',
    hint: 'All conditions must match, or any one attribute’s conditions.',
    options: [
      { value: 'all', label: 'All conditions (all)', selected: mode !== 'any' },
      { value: 'any', label: 'Any attribute (any)', selected: mode === 'any' },
    ],
  });
  for (const [key, conds] of Object.entries(search || {})) {
    for (const c of Array.isArray(conds) ? conds : []) addRow({ key, operator: c.operator, value: c.value });
  }
  return {
    rowsBox,
    addButton,
    mode: modeField,
    read() {
      const out = {};
      for (const row of rows) {
        const r = row.read();
        if (r instanceof Error) return r;
        (out[r[0]] ||= []).push(r[1]);
      }
      return { search: Object.keys(out).length ? out : null, mode: modeField.input.value };
    },
    clear() {
      rows.splice(0).forEach((r) => r.el.remove());
    },
  };
}

// --- the page ---------------------------------------------------------------------------

export default async function catalogPage(ctx, kind) {
  const { root, signal, query } = ctx;
  const meta = ENTITY[kind];
  const errors = errorArea();
  const results = h('div', { id: 'catalog-results', 'aria-busy': 'true' });
  const state = {
    search: query.get('search') || '',
    mode: query.get('search_mode') === 'any' ? 'any' : 'all',
    limit: Number(query.get('limit')) || 50,
    page: Math.max(1, Number(query.get('page')) || 1),
  };

  const choices = await filterChoices(signal, (err) => errors.show(err));
  let initial = null;
  try { initial = state.search ? JSON.parse(state.search) : null; } catch { state.search = ''; }
  const builder = filterBuilder(choices, { search: initial, mode: state.mode });
  const { rowsBox, addButton, mode } = builder;
  const limit = field('Per page', { name: 'limit', id: 'page-size' }, {
    tag: 'select', options: [25, 50, 100, 200].map((n) => ({ value: String(n), selected: n === state.limit })),
  });
  const clear = h('button', { type: 'button', class: 'btn btn-secondary' }, 'Clear filters');
  const formErrors = errorArea();
  const form = h('form', { class: 'panel form filter-form', id: 'filter-form', 'aria-labelledby': 'filter-h', novalidate: true },
    h('h2', { id: 'filter-h' }, 'Filter'),
    formErrors.el,
    h('p', { class: 'hint', id: 'no-conditions' }, `Add conditions on attributes or built-in fields; with none, every ${meta.one} is listed.`),
    rowsBox,
    h('div', { class: 'row wrap-row' }, addButton),
    h('div', { class: 'row wrap-row' }, mode.wrap, limit.wrap),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'btn', id: 'apply-filters' }, 'Apply'), clear));

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    formErrors.clear();
    const read = builder.read();
    if (read instanceof Error) { formErrors.show(read); return; }
    state.search = read.search ? JSON.stringify(read.search) : '';
    state.mode = read.mode;
    state.limit = Number(limit.input.value);
    state.page = 1;
    load(true);
  });
  clear.addEventListener('click', () => {
    builder.clear();
    state.search = '';
    state.page = 1;
    formErrors.clear();
    load(true);
  });

  // --- results
  const filteredKeys = () => {
    try { return Object.keys(JSON.parse(state.search || '{}')).filter((k) => !k.startsWith('_')).slice(0, 3); } catch { return []; }
  };
  function columns() {
    const cols = [];
    if (kind === 'products') cols.push({ label: 'Identifier', cell: (p) => h('a', { href: hrefOf(['products', p.identifier]) }, p.identifier) });
    else cols.push({ label: 'Identifier', cell: (p) => p.identifier });
    cols.push({ label: 'Name', cell: (p) => p.name });
    if (kind !== 'products') cols.push({ label: 'Product', cell: (p) => (p.product ? h('a', { href: hrefOf(['products', p.product.identifier]) }, p.product.name || p.product.identifier) : dash()) });
    if (kind === 'skus') cols.push({ label: 'Variant', cell: (p) => (p.variant ? `${p.variant.name} (${p.variant.identifier})` : dash()) });
    for (const key of filteredKeys()) {
      cols.push({ label: key, cell: (p) => (p.attributes && p.attributes[key] ? entriesNode(p.attributes[key]) : dash()) });
    }
    cols.push({ label: 'Updated', cell: (p) => time(p.updatedAt) });
    cols.push({ label: 'Self updated', cell: (p) => time(p.selfUpdatedAt) });
    return cols;
  }

  // Only the latest load draws: an earlier one that answers late (the page's first list,
  // after a filter was applied) is dropped, never shown under the filter's name.
  let latest = 0;
  async function load(announceIt) {
    const q = { limit: state.limit, page: state.page };
    if (state.search) { q.search = state.search; q.search_mode = state.mode; }
    const searched = Boolean(state.search);
    const mine = ++latest;
    setQuery(q);
    results.setAttribute('aria-busy', 'true');
    errors.clear();
    try {
      const res = await api.get(kind, { query: q, signal });
      if (mine !== latest) return;
      const p = res.pagination || {};
      replace(results,
        h('p', { class: 'total', id: 'result-total' }, h('strong', {}, String(p.totalResults ?? res.result.length)), ` ${meta.noun}`, searched ? ' match the filter' : ' in total'),
        table({ caption: { text: `${meta.noun}, by identifier`, hidden: true }, empty: `No ${meta.noun} match.`, rows: res.result || [], columns: columns() }),
        pager(p, async (n) => { state.page = n; await load(true); focusIn(results); }, meta.noun));
      if (announceIt) { const n = p.totalResults ?? 0; announce(`${n} ${n === 1 ? meta.one : meta.noun} found.`); }
    } catch (err) {
      if (mine !== latest) return;
      replace(results);
      errors.show(err);
    } finally {
      if (mine === latest) results.setAttribute('aria-busy', 'false');
    }
  }

  replace(root,
    h('p', { class: 'lead' }, `Browse the ${meta.noun} of the catalog. Filters go to the API as its `, h('code', {}, 'search'), ' parameter.'),
    form,
    h('section', { 'aria-labelledby': 'results-h' }, h('h2', { id: 'results-h' }, 'Results'), errors.el, results));
  await load(false);
}
