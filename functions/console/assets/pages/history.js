// An entity's change history (GET /{products|variants|skus|assets}/{identifier}/history):
// who changed it, when, and what (old → new), newest first; "Show older changes" follows
// the answer's cursor.

import * as api from '../api.js';
import { h, replace, errorArea, table, time, code, dash } from '../ui.js';
import { entriesNode } from './catalog.js';

/** Who made a change, as a person reads it. */
function actor(by) {
  if (!by) return dash();
  if (by.type === 'apiKey') return h('span', {}, 'API key ', code(by.id));
  if (by.type === 'console') return h('span', {}, 'Console (key ', code(by.keyId), ')');
  if (by.type === 'import') return h('span', {}, 'Import ', h('a', { href: '#/imports' }, code(by.id)));
  return dash();
}

/** One side of a change: the entries, a name, or "none". */
function side(value, isName) {
  if (value === null || value === undefined || (Array.isArray(value) && !value.length)) {
    return h('span', { class: 'muted' }, 'none');
  }
  return isName ? String(value) : entriesNode(value);
}

/** What a change did, one line per field: `field: old → new`. */
function changesNode(entry) {
  if (entry.changesOmitted) return h('span', { class: 'muted' }, 'Too large to keep');
  const c = entry.changes || {};
  const lines = [];
  if (c.name) lines.push(['name', c.name.old, c.name.new, true]);
  for (const [key, v] of Object.entries(c.attributes || {}).sort(([a], [b]) => a.localeCompare(b))) {
    lines.push([key, v.old, v.new, false]);
  }
  if (!lines.length) return h('span', { class: 'muted' }, 'No name or attribute changed');
  return h('ul', { class: 'plain-list changes' }, lines.map(([key, from, to, isName]) => h('li', {},
    code(key), ': ', side(from, isName), h('span', { 'aria-label': 'changed to' }, ' → '), side(to, isName))));
}

/**
 * The history section of an entity page: `path` is the entity's API path
 * (`products/chair`), `what` its noun.
 */
export function historySection(path, what, signal) {
  const errors = errorArea();
  const list = h('div', { id: 'history-list' }, h('p', { class: 'hint' }, 'Loading the history…'));
  const more = h('div', { class: 'pager' });
  const rows = [];
  const render = () => replace(list, table({
    caption: { text: `Changes of the ${what}, newest first`, hidden: true },
    empty: `No change of this ${what} is recorded yet (history starts with its first change, and is kept 90 days).`,
    rows,
    columns: [
      { label: 'When', cell: (e) => time(e.at) },
      { label: 'Event', cell: (e) => code(e.event) },
      { label: 'By', cell: (e) => actor(e.by) },
      { label: 'What changed', class: 'wrap', cell: changesNode },
    ],
  }));
  async function load(cursor) {
    errors.clear();
    try {
      const query = { limit: 20 };
      if (cursor) query.cursor = cursor;
      const res = await api.get(`${path}/history`, { query, signal });
      rows.push(...res.result);
      render();
      const next = res.pagination && res.pagination.nextCursor;
      // one load at a time: the button goes with its click
      replace(more, next
        ? h('button', { type: 'button', class: 'btn btn-secondary', on: { click: (ev) => { ev.currentTarget.disabled = true; load(next); } } }, 'Show older changes')
        : null);
    } catch (err) {
      errors.show(err);
    }
  }
  load(null);
  return h('section', { 'aria-labelledby': 'history-h', class: 'history-section' },
    h('h2', { id: 'history-h' }, 'History'),
    h('p', { class: 'hint' }, 'Who changed it, when, and what: kept 90 days, also after a delete.'),
    errors.el, list, more);
}
