import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';

/**
 * TypeScript types of the contract (`paths`, `components`, `operations`) by openapi-typescript.
 * One adaptation: an `int64` whose bounds go beyond ±2^53-1 (the spend budget) is typed
 * `number | bigint`, because such values arrive as `bigint` from a lossless JSON parser and
 * must be sent as `bigint` to stay exact.
 */
export async function generateTypes(document: object): Promise<string> {
  const ast = await openapiTS(structuredClone(document) as Parameters<typeof openapiTS>[0], {
    rootTypes: true,
    rootTypesNoSchemaPrefix: true,
    // A field with a default (versioning, scopes, timezone…) stays optional: a request may omit
    // it, and the server applies the default.
    defaultNonNullable: false,
    transform(schema) {
      if (schema.format !== 'int64' || !hasWideBound(schema as Record<string, unknown>)) return undefined;
      const types: ts.TypeNode[] = [keyword(ts.SyntaxKind.NumberKeyword), keyword(ts.SyntaxKind.BigIntKeyword)];
      if (Array.isArray(schema.type) && schema.type.includes('null')) types.push(ts.factory.createLiteralTypeNode(ts.factory.createNull()));
      return ts.factory.createUnionTypeNode(types);
    },
  });
  return astToString(ast);
}

export function hasWideBound(schema: Record<string, unknown>): boolean {
  return ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].some((bound) => {
    const value = schema[bound];
    return typeof value === 'number' && !Number.isSafeInteger(value);
  });
}

function keyword(kind: ts.KeywordTypeSyntaxKind): ts.TypeNode {
  return ts.factory.createKeywordTypeNode(kind);
}
