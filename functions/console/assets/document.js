// The API's own document (GET /v1/openapi.json, public), read once per page load: the console
// keeps no copy of what the document declares (the attribute types and target entities, and
// the operators each type and built-in field accepts), so what the API adds is offered here
// with no change.

import * as api from './api.js';

let doc = null;

/** The document, read at the first call (again after a failed read). */
export async function apiDocument(signal) {
  if (!doc) doc = await api.get('openapi.json', { signal });
  return doc;
}

/** {types, targets}: the enums of an attribute's creation body. */
export async function attributeChoices(signal) {
  const create = (await apiDocument(signal)).components.schemas.AttributeCreate.properties;
  return { types: create.type.enum, targets: create.targetEntity.enum };
}

/**
 * {types: {<attribute type>: [operator]}, system: {<built-in field>: [operator]}}: the
 * operator matrix the lists' `search` parameter declares (`x-operators`).
 */
export async function operatorMatrix(signal) {
  return (await apiDocument(signal)).components.parameters.search['x-operators'];
}
