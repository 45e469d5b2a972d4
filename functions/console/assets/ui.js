// Small DOM helpers shared by the pages. Everything is built with createElement and
// textContent (never innerHTML), so API data can never become markup.

let idCounter = 0;
/** A unique id for label/control pairs. */
export function uid(prefix = 'f') {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}

const PROPS = new Set(['value', 'checked', 'disabled', 'hidden', 'required', 'readOnly',
  'selected', 'multiple', 'open', 'type', 'min', 'max', 'step', 'name', 'placeholder',
  'pattern', 'accept', 'htmlFor', 'id', 'title', 'tabIndex', 'href', 'download']);

/**
 * h('button', {class: 'btn', on: {click}}, 'Text', child, ...): an element.
 * `text` sets textContent; `class` takes a string; `data` an object of data-* values;
 * `on` event listeners; aria-* and other attributes go through setAttribute.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, val] of Object.entries(attrs || {})) {
    if (val === undefined || val === null || val === false && !PROPS.has(key)) continue;
    if (key === 'class') el.className = Array.isArray(val) ? val.filter(Boolean).join(' ') : val;
    else if (key === 'text') el.textContent = String(val);
    else if (key === 'for') el.htmlFor = val;
    else if (key === 'on') for (const [ev, fn] of Object.entries(val)) el.addEventListener(ev, fn);
    else if (key === 'data') for (const [k, v] of Object.entries(val)) el.dataset[k] = v;
    else if (PROPS.has(key)) el[key] = val;
    else el.setAttribute(key, val === true ? '' : String(val));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Empties `el` and fills it with `children`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// --- status and errors -------------------------------------------------------------

/** Says `message` in the page's polite live region (and shows it). */
export function announce(message) {
  const region = document.getElementById('status');
  if (!region) return;
  region.textContent = '';
  // A fresh text node after clearing makes screen readers repeat an identical message.
  window.requestAnimationFrame(() => { region.textContent = message; });
}

/** The user-facing text of an error (the API's `error` string, with its status). */
export function errorText(err) {
  if (err && err.status) {
    const what = err.status === 403 ? 'Not allowed' : `Error ${err.status}`;
    return `${what}: ${err.message}`;
  }
  return err && err.message ? err.message : String(err);
}

/**
 * An error area: `.show(err)` puts the message in a role="alert" element (read out at
 * once), `.clear()` empties it.
 */
export function errorArea() {
  const box = h('div', { class: 'alert-slot' });
  return {
    el: box,
    show(err) {
      if (err && err.name === 'AbortError') return;
      replace(box, h('div', { class: 'alert', role: 'alert' }, errorText(err)));
    },
    clear() { box.replaceChildren(); },
  };
}

// --- formatting --------------------------------------------------------------------

const dateFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** A <time> element for an RFC 3339 string (or a dash for null). */
export function time(iso) {
  if (!iso) return h('span', { class: 'muted', text: '—' });
  const d = new Date(iso);
  const shown = Number.isNaN(d.getTime()) ? iso : dateFmt.format(d);
  return h('time', { datetime: iso, title: iso }, shown);
}

export function code(text) {
  return h('code', {}, String(text));
}

export function badge(text, kind = '') {
  return h('span', { class: ['badge', kind && `badge-${kind}`] }, text);
}

export function dash() {
  return h('span', { class: 'muted', text: '—' });
}

// --- tables ------------------------------------------------------------------------

/**
 * A table in a horizontally scrolling, keyboard-focusable region.
 * columns: [{label, cell(row) -> Node|string, class?}]; the first column is the row header.
 */
export function table({ caption, columns, rows, empty = 'Nothing here yet.', rowHeader = true, rowClass }) {
  if (!rows.length) return h('p', { class: 'empty' }, empty);
  const thead = h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.class }, c.label))));
  const tbody = h('tbody', {}, rows.map((row) => h('tr', { class: rowClass ? rowClass(row) : undefined }, columns.map((c, i) => {
    const content = c.cell(row);
    return i === 0 && rowHeader
      ? h('th', { scope: 'row', class: c.class }, content)
      : h('td', { class: c.class }, content);
  }))));
  const t = h('table', {}, h('caption', { class: caption.hidden ? 'visually-hidden' : '' }, caption.text || caption), thead, tbody);
  return h('div', { class: 'table-wrap', role: 'region', 'aria-label': caption.text || caption, tabindex: '0' }, t);
}

/** A definition list from [label, value] pairs (values may be nodes). */
export function dl(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** Moves focus to the first match of `selector` in `container` (after a list redraw). */
export function focusIn(container, selector = '.table-wrap, .empty') {
  const el = container.querySelector(selector);
  if (!el) return;
  if (!el.hasAttribute('tabindex')) el.setAttribute('tabindex', '-1');
  el.focus();
}

/** "Page 2 of 5 · 230 results" with Previous/Next buttons calling onPage(n). */
export function pager(pagination, onPage, what = 'results') {
  const p = pagination || {};
  const page = p.page || 1;
  const pages = p.totalPages || 0;
  const nav = h('div', { class: 'pager' });
  const n = p.totalResults ?? 0;
  const noun = n === 1 ? what.replace(/s$/, '') : what;
  nav.append(h('p', { class: 'pager-info' }, `${n} ${noun}`, pages > 1 ? ` · page ${page} of ${pages}` : ''));
  if (pages > 1) {
    nav.append(
      h('button', { type: 'button', class: 'btn btn-secondary', disabled: page <= 1, on: { click: () => onPage(page - 1) } }, 'Previous page'),
      h('button', { type: 'button', class: 'btn btn-secondary', disabled: page >= pages, on: { click: () => onPage(page + 1) } }, 'Next page'),
    );
  }
  return nav;
}

// --- form controls -----------------------------------------------------------------

/** A labelled input (or select/textarea when `tag` says so); returns {wrap, input}. */
export function field(label, attrs = {}, { tag = 'input', hint, options } = {}) {
  const id = attrs.id || uid();
  const hintId = hint ? `${id}-hint` : undefined;
  const input = h(tag, { ...attrs, id, 'aria-describedby': hintId });
  if (options) for (const o of options) input.append(option(o.value, o.label ?? o.value, o.selected));
  const wrap = h('div', { class: 'field' }, h('label', { for: id }, label), input,
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null);
  return { wrap, input };
}

export function option(value, label = value, selected = false) {
  return h('option', { value, selected }, label);
}

/** A labelled checkbox; returns {wrap, input}. */
export function checkbox(label, attrs = {}, hint) {
  const id = attrs.id || uid('c');
  const hintId = hint ? `${id}-hint` : undefined;
  const input = h('input', { type: 'checkbox', ...attrs, id, 'aria-describedby': hintId });
  const wrap = h('div', { class: 'check' }, input, h('label', { for: id }, label),
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null);
  return { wrap, input };
}

/** Disables a form's submit button while `work` runs. */
export async function busy(button, work) {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try { return await work(); } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

// --- one-time secrets ----------------------------------------------------------------

/**
 * A read-only field showing a secret once, with a Copy button (clipboard API, or the text
 * selected for a manual copy when the clipboard is not available).
 */
export function secretBox({ heading, label, value, note, testId }) {
  const id = uid('secret');
  const input = h('input', { id, type: 'text', readOnly: true, value, class: 'secret', spellcheck: 'false', autocomplete: 'off', data: { testid: testId || 'secret' } });
  const copied = h('span', { class: 'hint', 'aria-live': 'polite' });
  const copy = h('button', { type: 'button', class: 'btn btn-secondary', on: { click: async () => {
    input.focus();
    input.select();
    try {
      await navigator.clipboard.writeText(value);
      copied.textContent = 'Copied to the clipboard.';
    } catch {
      copied.textContent = 'Selected: press Ctrl+C (or ⌘C) to copy.';
    }
  } } }, 'Copy');
  return h('section', { class: 'panel panel-secret', 'aria-labelledby': `${id}-h` },
    h('h2', { id: `${id}-h` }, heading),
    h('div', { class: 'field' }, h('label', { for: id }, label), h('div', { class: 'row' }, input, copy)),
    copied,
    h('p', { class: 'note' }, note));
}

// --- confirmation dialog -------------------------------------------------------------

/**
 * Asks in a modal <dialog>; resolves true when confirmed, false on Cancel or Escape.
 * Focus goes back to what had it.
 */
export function confirmDialog({ title, message, confirmLabel = 'Confirm', danger = true }) {
  return new Promise((resolve) => {
    const before = document.activeElement;
    const titleId = uid('dlg');
    const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': titleId, 'aria-describedby': `${titleId}-msg` });
    const form = h('form', { method: 'dialog' },
      h('h2', { id: titleId }, title),
      h('p', { id: `${titleId}-msg` }, message),
      h('div', { class: 'actions' },
        h('button', { type: 'submit', value: 'cancel', class: 'btn btn-secondary' }, 'Cancel'),
        h('button', { type: 'submit', value: 'confirm', class: danger ? 'btn btn-danger' : 'btn' }, confirmLabel)));
    dialog.append(form);
    dialog.addEventListener('close', () => {
      const ok = dialog.returnValue === 'confirm';
      dialog.remove();
      if (before && before.isConnected) before.focus();
      resolve(ok);
    });
    document.body.append(dialog);
    dialog.showModal();
    form.querySelector('button[value="cancel"]').focus();
  });
}

/** JSON, pretty-printed, in a <pre>. */
export function jsonBlock(value) {
  return h('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}
