// Imports: POST /imports {"format":"ndjson"} → an upload URL; the file goes there with an
// XMLHttpRequest PUT (its upload progress drives a <progress>); then GET /imports/{id}
// every second until the status is final. History: GET /imports (paged, newest first).

import * as api from '../api.js';
import {
  h, replace, announce, errorArea, table, pager, busy, time, badge, code, uid, dash, focusIn,
} from '../ui.js';

const FINAL = new Set(['succeeded', 'completed_with_errors', 'failed']);
const STATUS_KIND = { succeeded: 'ok', completed_with_errors: 'warn', failed: 'bad', running: '', awaiting_upload: 'muted' };
const STATUS_LABEL = {
  awaiting_upload: 'awaiting upload', running: 'running', succeeded: 'succeeded',
  completed_with_errors: 'completed with errors', failed: 'failed',
};
const PAGE_SIZE = 20;
const POLL_MS = 1000;

const statusBadge = (s) => h('span', { class: 'import-status', data: { status: s } }, badge(STATUS_LABEL[s] || s, STATUS_KIND[s]), h('span', { class: 'visually-hidden' }, ` (${s})`));

/** The headers a presigned upload needs, under whichever name the answer gives them. */
function uploadHeadersOf(created) {
  const hdrs = created.uploadHeaders || created.requiredHeaders || created.headers;
  return hdrs && typeof hdrs === 'object' && !Array.isArray(hdrs) ? hdrs : {};
}

/** PUTs `file` to `url`; onProgress(loaded, total). Resolves on 2xx, rejects otherwise. */
function upload(url, file, headers, onProgress, signal) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, String(v));
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded, e.total); };
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve();
      else reject(new Error(`The upload was refused (HTTP ${xhr.status}). The import stays waiting for its file; start a new one.`));
    };
    xhr.onerror = () => reject(new Error('The upload failed: the storage could not be reached (network or CORS).'));
    xhr.onabort = () => reject(Object.assign(new Error('Upload cancelled.'), { name: 'AbortError' }));
    if (signal) signal.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.send(file);
  });
}

function failuresTable(errors, caption) {
  return table({
    caption: { text: caption, hidden: true },
    rows: errors,
    columns: [
      { label: 'Line', cell: (f) => String(f.line) },
      { label: 'Identifier', cell: (f) => f.identifier ?? dash() },
      { label: 'Status', cell: (f) => String(f.status) },
      { label: 'Error', class: 'wrap', cell: (f) => f.error },
    ],
  });
}

function countsText(imp) {
  const total = imp.total ?? '?';
  return `${imp.processed ?? 0} of ${total} lines processed: ${imp.created ?? 0} created, ${imp.updated ?? 0} updated, ${imp.failed ?? 0} failed`;
}

export default async function importsPage(ctx) {
  const { root, signal } = ctx;
  const errors = errorArea();
  const historyBox = h('div', { id: 'imports-list', 'aria-busy': 'true' });
  const runBox = h('div', { id: 'import-run' });
  let page = 1;

  // --- upload form
  const fileId = uid('file');
  const fileInput = h('input', { type: 'file', id: fileId, name: 'file', accept: '.ndjson,.jsonl,.json,application/x-ndjson,text/plain', required: true, 'aria-describedby': `${fileId}-hint` });
  const submit = h('button', { type: 'submit', class: 'btn' }, 'Upload and import');
  const formErrors = errorArea();
  const form = h('form', { class: 'panel form', id: 'import-form', 'aria-labelledby': 'import-h', novalidate: true },
    h('h2', { id: 'import-h' }, 'Import products'),
    formErrors.el,
    h('div', { class: 'field' },
      h('label', { for: fileId }, 'NDJSON file'),
      fileInput,
      h('p', { class: 'hint', id: `${fileId}-hint` }, 'One product per line: the body of PATCH /products/{identifier} with its "identifier" (variants, SKUs, values and assets included). Up to 5 GiB.')),
    h('div', { class: 'actions' }, submit));

  function drawRun(file) {
    const upId = uid('up');
    const procId = uid('proc');
    const upBar = h('progress', { id: upId, max: '100', value: '0' });
    const upText = h('span', { class: 'hint' }, 'Starting…');
    const procBar = h('progress', { id: procId, max: '100' });
    const statusEl = h('p', { id: 'import-status', class: 'import-line' }, 'Status: ', h('span', {}, 'not started'));
    const countsEl = h('p', { id: 'import-counts', class: 'hint' });
    const failBox = h('div');
    replace(runBox, h('section', { class: 'panel', 'aria-labelledby': 'run-h' },
      h('h2', { id: 'run-h' }, `Importing ${file.name}`),
      h('div', { class: 'field' }, h('label', { for: upId }, 'Upload'), upBar, upText),
      h('div', { class: 'field' }, h('label', { for: procId }, 'Processing'), procBar),
      statusEl, countsEl, failBox));
    return {
      uploadProgress(loaded, total) {
        const pct = total ? Math.round((loaded / total) * 100) : 0;
        upBar.value = pct;
        upText.textContent = `${pct} % (${loaded} of ${total} bytes)`;
      },
      uploaded() { upBar.value = 100; upText.textContent = 'Uploaded.'; },
      show(imp) {
        replace(statusEl, 'Status: ', statusBadge(imp.status), ' ', code(imp.id));
        countsEl.textContent = countsText(imp);
        if (imp.total) { procBar.max = imp.total; procBar.value = imp.processed || 0; } else if (FINAL.has(imp.status)) { procBar.max = 1; procBar.value = 1; } else procBar.removeAttribute('value');
        if (imp.errors && imp.errors.length) {
          replace(failBox, h('h3', {}, `Failed lines (${imp.failed})`), failuresTable(imp.errors, 'Failed lines of this import'));
        }
      },
    };
  }

  async function poll(id, run) {
    for (;;) {
      const res = await api.get(`imports/${api.seg(id)}`, { signal });
      const imp = res.result;
      run.show(imp);
      if (FINAL.has(imp.status)) return imp;
      await new Promise((resolve, reject) => {
        const t = setTimeout(resolve, POLL_MS);
        signal.addEventListener('abort', () => { clearTimeout(t); reject(Object.assign(new Error('stopped'), { name: 'AbortError' })); }, { once: true });
      });
    }
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formErrors.clear();
    const file = fileInput.files && fileInput.files[0];
    if (!file) {
      formErrors.show(new Error('Choose an NDJSON file first.'));
      fileInput.focus();
      return;
    }
    await busy(submit, async () => {
      const run = drawRun(file);
      try {
        const created = (await api.post('imports', { format: 'ndjson' }, { signal })).result;
        run.show(created);
        announce(`Uploading ${file.name}…`);
        // Not tied to the page's signal: leaving the page must not cut the upload short.
        await upload(created.uploadUrl, file, uploadHeadersOf(created), run.uploadProgress);
        run.uploaded();
        announce('Uploaded. Processing the import…');
        const done = await poll(created.id, run);
        announce(`Import ${STATUS_LABEL[done.status] || done.status}: ${countsText(done)}.`);
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
      const res = await api.get('imports', { query: { limit: PAGE_SIZE, page }, signal });
      const list = res.result || [];
      replace(historyBox,
        table({
          caption: { text: 'Imports, newest first', hidden: true },
          empty: 'No imports yet.',
          rows: list,
          columns: [
            { label: 'Import', cell: (i) => code(i.id) },
            { label: 'Status', cell: (i) => statusBadge(i.status) },
            { label: 'Lines', class: 'wrap', cell: (i) => countsText(i) },
            { label: 'Started', cell: (i) => time(i.startedAt || i.createdAt) },
            { label: 'Finished', cell: (i) => time(i.finishedAt) },
            {
              label: 'Failed lines',
              class: 'wrap',
              cell: (i) => (i.errors && i.errors.length
                ? h('details', {}, h('summary', {}, `${i.errors.length} line${i.errors.length === 1 ? '' : 's'}`),
                  h('ul', { class: 'plain-list small' }, i.errors.map((f) => h('li', {}, `Line ${f.line}`, f.identifier ? ` (${f.identifier})` : '', `: ${f.error}`))))
                : dash()),
            },
          ],
        }),
        pager(res.pagination, async (p) => { page = p; await loadHistory(); focusIn(historyBox); }, 'imports'));
    } catch (err) {
      errors.show(err);
    } finally {
      historyBox.setAttribute('aria-busy', 'false');
    }
  }

  replace(root,
    h('p', { class: 'lead' }, 'Load many products at once from an NDJSON file. Each line is applied on its own: a bad line is reported and never blocks the others.'),
    errors.el,
    form,
    runBox,
    h('section', { 'aria-labelledby': 'history-h' }, h('h2', { id: 'history-h' }, 'History'), historyBox));
  await loadHistory();
}
