// Attribute definitions: GET /attributes (optionally ?targetEntity=, paged) and POST
// /attributes {displayName, key, targetEntity, type, isLocalized?, isMulti?,
// isChannelScoped?, options? (select), metaobjectDefinition? (metaobject)}.

import * as api from '../api.js';
import { attributeChoices } from '../document.js';
import {
  h, replace, announce, errorArea, table, pager, field, checkbox, busy, badge, code, dash, focusIn,
} from '../ui.js';

const PAGE_SIZE = 200;
const KEY_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

const yesNo = (v) => (v ? badge('Yes', 'ok') : h('span', { class: 'muted' }, 'No'));

export default async function attributesPage(ctx) {
  const { root, signal } = ctx;
  const errors = errorArea();
  const listBox = h('div', { id: 'attributes-list', 'aria-busy': 'true' });
  let page = 1;
  // without the document the list still works (all entities); only the form needs it
  let TYPES = null;
  let TARGETS = [];
  try {
    ({ types: TYPES, targets: TARGETS } = await attributeChoices(signal));
  } catch (err) {
    errors.show(err);
  }

  // --- list with its target filter
  const target = field('Target entity', { name: 'targetEntity', id: 'attr-target-filter' }, {
    tag: 'select', options: [{ value: '', label: 'All entities' }, ...TARGETS.map((t) => ({ value: t }))],
  });
  const filterForm = h('form', { class: 'filters', 'aria-label': 'Attribute filter' }, target.wrap,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'btn btn-secondary' }, 'Show')));
  filterForm.addEventListener('submit', (e) => { e.preventDefault(); page = 1; load(); });

  async function load() {
    listBox.setAttribute('aria-busy', 'true');
    try {
      const res = await api.get('attributes', { query: { limit: PAGE_SIZE, page, targetEntity: target.input.value }, signal });
      replace(listBox,
        table({
          caption: { text: 'Attribute definitions', hidden: true },
          empty: 'No attribute definitions.',
          rows: res.result || [],
          columns: [
            { label: 'Key', cell: (a) => code(a.key) },
            { label: 'Name', cell: (a) => a.name },
            { label: 'Type', cell: (a) => a.type },
            { label: 'Target', cell: (a) => a.targetEntity || a.key.split('.')[0] },
            { label: 'Localized', cell: (a) => yesNo(a.isLocalized) },
            { label: 'Multi-value', cell: (a) => yesNo(a.isMulti) },
            { label: 'Per channel', cell: (a) => yesNo(a.isChannelScoped) },
            {
              label: 'Options',
              class: 'wrap',
              cell: (a) => (a.options && a.options.length ? a.options.join(', ')
                : a.metaobjectDefinition ? h('span', {}, 'Metaobject: ', code(a.metaobjectDefinition)) : dash()),
            },
          ],
        }),
        pager(res.pagination, async (p) => { page = p; await load(); focusIn(listBox); }, 'definitions'));
    } catch (err) {
      errors.show(err);
    } finally {
      listBox.setAttribute('aria-busy', 'false');
    }
  }

  // --- create form (catalog:write)
  let form = null;
  if (ctx.can('catalog:write') && TYPES) {
    const displayName = field('Display name', { name: 'displayName', required: true, maxlength: '255', autocomplete: 'off' });
    const key = field('Key', { name: 'key', required: true, pattern: KEY_PATTERN.source, maxlength: '64', autocomplete: 'off', spellcheck: 'false' },
      { hint: 'Lower-case letters, digits and _; starts with a letter (at most 64). Answers name it <entity>.<key>.' });
    const entity = field('Target entity', { name: 'targetEntity', id: 'attr-target' }, { tag: 'select', options: TARGETS.map((t) => ({ value: t })) });
    const type = field('Type', { name: 'type', id: 'attr-type' }, { tag: 'select', options: TYPES.map((t) => ({ value: t })) });
    const localized = checkbox('Localized (a value per language)', { name: 'isLocalized' });
    const multi = checkbox('Multi-value', { name: 'isMulti' });
    const channel = checkbox('Per sales channel', { name: 'isChannelScoped' });
    const options = field('Options', { name: 'options', rows: '4' }, { tag: 'textarea', hint: 'The allowed values, one per line.' });
    const definition = field('Metaobject definition', { name: 'metaobjectDefinition', autocomplete: 'off' }, { hint: 'The name of the metaobject definition its values reference.' });
    const syncType = () => {
      options.wrap.hidden = type.input.value !== 'select';
      definition.wrap.hidden = type.input.value !== 'metaobject';
    };
    type.input.addEventListener('change', syncType);
    syncType();
    const submit = h('button', { type: 'submit', class: 'btn' }, 'Create attribute');
    const formErrors = errorArea();
    form = h('form', { class: 'panel form', id: 'create-attribute', 'aria-labelledby': 'create-attr-h', novalidate: true },
      h('h2', { id: 'create-attr-h' }, 'Create an attribute'),
      formErrors.el,
      h('div', { class: 'grid-2' }, displayName.wrap, key.wrap, entity.wrap, type.wrap),
      options.wrap, definition.wrap,
      h('fieldset', {}, h('legend', {}, 'Scope of values'), localized.wrap, multi.wrap, channel.wrap),
      h('div', { class: 'actions' }, submit));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      formErrors.clear();
      const body = {
        displayName: displayName.input.value.trim(),
        key: key.input.value.trim(),
        targetEntity: entity.input.value,
        type: type.input.value,
      };
      if (!body.displayName) { formErrors.show(new Error('Give a display name.')); displayName.input.focus(); return; }
      if (!KEY_PATTERN.test(body.key)) { formErrors.show(new Error('The key must match [a-z][a-z0-9_]{0,63}.')); key.input.focus(); return; }
      if (localized.input.checked) body.isLocalized = true;
      if (multi.input.checked) body.isMulti = true;
      if (channel.input.checked) body.isChannelScoped = true;
      if (body.type === 'select') {
        body.options = options.input.value.split('\n').map((s) => s.trim()).filter(Boolean);
      }
      if (body.type === 'metaobject') body.metaobjectDefinition = definition.input.value.trim();
      await busy(submit, async () => {
        try {
          const res = await api.post('attributes', body, { signal });
          announce(`Attribute ${res.result.key} created.`);
          form.reset();
          syncType();
          page = 1;
          await load();
        } catch (err) {
          formErrors.show(err);
        }
      });
    });
  }

  replace(root,
    h('p', { class: 'lead' }, 'Attributes are the typed fields of products, variants, SKUs, bundles and assets.'),
    errors.el,
    h('section', { 'aria-labelledby': 'defs-h' }, h('h2', { id: 'defs-h' }, 'Definitions'), filterForm, listBox),
    form || (TYPES
      ? h('p', { class: 'note' }, 'Creating attributes needs the catalog:write scope, which this session does not hold.')
      : h('p', { class: 'note' }, 'Creating attributes needs the API\'s document (GET /v1/openapi.json), which could not be read.')));
  await load();
}
