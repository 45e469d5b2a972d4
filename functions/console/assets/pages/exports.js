// Exports: POST /exports {entity, include, search?} starts one; GET /exports/{id} every
// second drives a <progress> of written / total until the status is final; a succeeded
// export offers its presigned download link. History: GET /exports (paged, newest first).

import * as api from '../api.js';
import {
  h, replace, announce, errorArea, table, pager, busy, time, badge, code, dash, focusIn, field, checkbox,
} from '../ui.js';

const FINAL = new Set(['succeeded', 'failed']);
const STATUS_KIND = { succeeded: 'ok', failed: 'bad', running: '' };
const PAGE_SIZE = 20;
const POLL_MS = 1000;

const statusBadge = (s) => h('span', { class: 'export-status', data: { status: s } }, badge(s, STATUS_KIND[s]), h('span', { class: 'visually-hidden' }, ` (${s})`));

const countsText = (exp) => `${exp.written ?? 0} of ${exp.total ?? 0} entities written`;

/** The download link of a succeeded export (its URL works for an hour). */
const download = (exp) => (exp.url
  ? h('a', { href: exp.url, class: 'export-download', download: `${exp.id}.ndjson.gz`, rel: 'noopener' }, 'Download (.ndjson.gz)')
  : dash());

export default async function exportsPage(ctx) {
  const { root, signal } = ctx;
  const errors = errorArea();
  const historyBox = h('div', { id: 'exports-list', 'aria-busy': 'true' });
  const runBox = h('div', { id: 'export-run' });
  let page = 1;

  // --- start form
  const entity = field('Entities', { name: 'entity' }, {
    tag: 'select',
    options: [{ value: 'products', label: 'Products' }, { value: 'variants', label: 'Variants' }, { value: 'skus', label: 'SKUs' }],
  });
  const withVariants = checkbox('Embed variants', { name: 'variants', checked: true });
  const withSkus = checkbox('Embed SKUs', { name: 'skus', checked: true }, 'Products embed their variants and SKUs; variants their SKUs.');
  const search = field('Filter (optional)', { name: 'search', rows: 3, spellcheck: 'false' }, {
    tag: 'textarea',
    hint: 'The lists’ search filter as JSON, e.g. {"product.color":[{"operator":"EQUALS","value":"red"}]}.',
  });
  const sync = () => {
    const e = entity.input.value;
    withVariants.input.disabled = e !== 'products';
    withSkus.input.disabled = e === 'skus';
  };
  entity.input.addEventListener('change', sync);
  const submit = h('button', { type: 'submit', class: 'btn' }, 'Start export');
  const formErrors = errorArea();
  const form = h('form', { class: 'panel form', id: 'export-form', 'aria-labelledby': 'export-h', novalidate: true },
    h('h2', { id: 'export-h' }, 'Export'),
    formErrors.el, entity.wrap, withVariants.wrap, withSkus.wrap, search.wrap,
    h('div', { class: 'actions' }, submit));

  function body() {
    const e = entity.input.value;
    const include = [];
    if (e === 'products' && withVariants.input.checked) include.push('variants');
    if (e !== 'skus' && withSkus.input.checked) include.push('skus');
    const out = { entity: e, include };
    const text = search.input.value.trim();
    if (text) out.search = text;
    return out;
  }

  function drawRun() {
    const bar = h('progress', { id: 'export-progress', max: '100' });
    const statusEl = h('p', { id: 'export-status', class: 'import-line' }, 'Status: ', h('span', {}, 'starting'));
    const countsEl = h('p', { id: 'export-counts', class: 'hint' });
    const linkEl = h('p', { id: 'export-link' });
    replace(runBox, h('section', { class: 'panel', 'aria-labelledby': 'export-run-h' },
      h('h2', { id: 'export-run-h' }, 'Exporting'),
      h('div', { class: 'field' }, h('label', { for: 'export-progress' }, 'Written'), bar),
      statusEl, countsEl, linkEl));
    return {
      show(exp) {
        replace(statusEl, 'Status: ', statusBadge(exp.status), ' ', code(exp.id), ' as of ', time(exp.asOf));
        countsEl.textContent = countsText(exp);
        bar.max = Math.max(exp.total || 0, exp.written || 0, 1);
        bar.value = exp.status === 'succeeded' ? bar.max : (exp.written || 0);
        replace(linkEl, exp.error ? exp.error : (exp.url ? download(exp) : ''));
      },
    };
  }

  async function poll(id, run) {
    for (;;) {
      const exp = (await api.get(`exports/${api.seg(id)}`, { signal })).result;
      run.show(exp);
      if (FINAL.has(exp.status)) return exp;
      await new Promise((resolve, reject) => {
        const t = setTimeout(resolve, POLL_MS);
        signal.addEventListener('abort', () => { clearTimeout(t); reject(Object.assign(new Error('stopped'), { name: 'AbortError' })); }, { once: true });
      });
    }
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formErrors.clear();
    await busy(submit, async () => {
      try {
        const created = (await api.post('exports', body(), { signal })).result;
        const run = drawRun();
        run.show(created);
        announce('Export started…');
        const done = await poll(created.id, run);
        announce(`Export ${done.status}: ${countsText(done)}.`);
        page = 1;
        await loadHistory();
      } catch (err) {
        if (err.name !== 'AbortError') formErrors.show(err);
      }
    });
  });

  // --- history
  async function loadHistory() {
    historyBox.setAttribute('aria-busy', 'true');
    try {
      const res = await api.get('exports', { query: { limit: PAGE_SIZE, page }, signal });
      replace(historyBox,
        table({
          caption: { text: 'Exports, newest first', hidden: true },
          empty: 'No exports in the last 7 days.',
          rows: res.result || [],
          columns: [
            { label: 'Export', cell: (x) => code(x.id) },
            { label: 'Status', cell: (x) => statusBadge(x.status) },
            { label: 'Entities', class: 'wrap', cell: (x) => countsText(x) },
            { label: 'As of', cell: (x) => time(x.asOf) },
            { label: 'Finished', cell: (x) => time(x.finishedAt) },
            { label: 'File', cell: (x) => (x.error ? h('span', { class: 'wrap' }, x.error) : download(x)) },
          ],
        }),
        pager(res.pagination, async (p) => { page = p; await loadHistory(); focusIn(historyBox); }, 'exports'));
    } catch (err) {
      errors.show(err);
    } finally {
      historyBox.setAttribute('aria-busy', 'false');
    }
  }

  sync();
  replace(root,
    h('p', { class: 'lead' }, 'Hand over the catalog as one file: a gzip NDJSON file with one entity per line, in identifier order, each as the API shows it. The file plus the changes after its “as of” time is the catalog.'),
    errors.el,
    form,
    runBox,
    h('section', { 'aria-labelledby': 'exports-history-h' }, h('h2', { id: 'exports-history-h' }, 'History'), historyBox));
  await loadHistory();
}
