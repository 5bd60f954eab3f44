import { isIP, BlockList } from 'node:net';
import { S3Error } from './errors.ts';

/**
 * Bucket policies as the endpoint evaluates them: a JSON document of statements, each an Effect
 * (Allow or Deny), who it is about (Principal or NotPrincipal), what (Action or NotAction), on
 * which resources (Resource or NotResource) and under which conditions. A request's keys act for
 * their organization: a policy's Deny takes from the bucket's own organization what its keys
 * could otherwise do, and its Allow gives another organization's keys the object operations and
 * listings it names (access.ts says which). `"*"` means anyone: every organization's keys, and
 * unsigned (anonymous) requests, which no other principal names. What the endpoint cannot evaluate (an unknown condition operator) is
 * refused when the policy is put, never ignored when a request comes.
 */

/**
 * Who a request is, as a policy names it: its organization (the account) and its access key (the
 * user); or, for an unsigned request, no one (`anonymous`, whose orgId is no organization's).
 */
export interface PolicyPrincipal {
  orgId: string;
  accessKeyId: string;
  anonymous?: boolean;
}

/** What a request asks, as a policy names it. */
export interface PolicyQuestion {
  principal: PolicyPrincipal;
  /** `s3:GetObject`, `s3:ListBucket`… */
  action: string;
  /** `arn:aws:s3:::bucket` or `arn:aws:s3:::bucket/key`. */
  resource: string;
  /** The value of a condition key for this request (lower-case key), or undefined when the request has none. */
  value(key: string): Promise<string | undefined>;
}

interface Condition {
  operator: string;
  ifExists: boolean;
  key: string;
  values: string[];
}

interface Statement {
  effect: 'Allow' | 'Deny';
  principals?: string[];
  notPrincipals?: string[];
  actions?: string[];
  notActions?: string[];
  resources?: string[];
  notResources?: string[];
  conditions: Condition[];
}

export interface BucketPolicy {
  statements: Statement[];
}

const malformed = (message: string) => new S3Error('MalformedPolicy', 400, message);

/** The condition operators evaluated (each also with `IfExists`); another is refused when the policy is put. */
const OPERATORS = new Set([
  'StringEquals',
  'StringNotEquals',
  'StringEqualsIgnoreCase',
  'StringNotEqualsIgnoreCase',
  'StringLike',
  'StringNotLike',
  'NumericEquals',
  'NumericNotEquals',
  'NumericLessThan',
  'NumericLessThanEquals',
  'NumericGreaterThan',
  'NumericGreaterThanEquals',
  'Bool',
  'IpAddress',
  'NotIpAddress',
  'ArnEquals',
  'ArnLike',
  'ArnNotEquals',
  'ArnNotLike',
  'Null',
]);
/** Operators that hold when the key is absent (S3 evaluates a negated match of nothing as true). */
const NEGATED = new Set([
  'StringNotEquals',
  'StringNotEqualsIgnoreCase',
  'StringNotLike',
  'NumericNotEquals',
  'NotIpAddress',
  'ArnNotEquals',
  'ArnNotLike',
]);

const list = (value: unknown, field: string): string[] => {
  const values = Array.isArray(value) ? value : [value];
  if (values.length === 0 || values.some((item) => typeof item !== 'string' || item === ''))
    throw malformed(`Policy has an invalid ${field}`);
  return values as string[];
};

function principalsOf(value: unknown, field: string): string[] {
  if (value === '*') return ['*'];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw malformed(`Invalid principal in policy: ${field}`);
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) throw malformed(`Invalid principal in policy: ${field}`);
  const principals: string[] = [];
  for (const [kind, names] of entries) {
    // Only accounts and their users exist here (organizations and their keys); services, federated users and canonical ids do not.
    if (kind !== 'AWS') throw malformed(`Invalid principal in policy: ${kind} principals are not offered`);
    principals.push(...list(names, 'principal'));
  }
  return principals;
}

function conditionsOf(value: unknown): Condition[] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw malformed('Policy has an invalid condition');
  const conditions: Condition[] = [];
  for (const [name, block] of Object.entries(value as Record<string, unknown>)) {
    const ifExists = name.endsWith('IfExists');
    const operator = ifExists ? name.slice(0, -'IfExists'.length) : name;
    if (!OPERATORS.has(operator)) throw malformed(`Policy has an unsupported condition operator: ${name}`);
    if (typeof block !== 'object' || block === null || Array.isArray(block)) throw malformed('Policy has an invalid condition');
    for (const [key, values] of Object.entries(block as Record<string, unknown>)) {
      const texts = (Array.isArray(values) ? values : [values]).map((item) =>
        typeof item === 'string' || typeof item === 'number' || typeof item === 'boolean' ? String(item) : undefined,
      );
      if (texts.length === 0 || texts.includes(undefined)) throw malformed('Policy has an invalid condition value');
      conditions.push({ operator, ifExists, key: key.toLowerCase(), values: texts as string[] });
    }
  }
  return conditions;
}

/** A wildcard pattern (`*` any run, `?` one character) as a regular expression. */
function wildcard(pattern: string, caseInsensitive = false): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, caseInsensitive ? 'is' : 's');
}

function checkResource(resource: string, bucketName: string): void {
  if (resource === '*') return;
  const match = /^arn:aws:s3:::([^/]+)(\/.*)?$/.exec(resource);
  // A policy can only be about the bucket it is attached to (bucket names are per organization).
  if (!match || !wildcard(match[1]!).test(bucketName)) throw malformed('Policy has invalid resource');
}

function checkAction(action: string): void {
  if (action !== '*' && !/^s3:[A-Za-z*?]+$/.test(action)) throw malformed('Policy has invalid action');
}

/** Parses and checks a policy document for the bucket it is put on; S3's MalformedPolicy otherwise. */
export function parsePolicy(text: string, bucketName: string): BucketPolicy {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw malformed("Policies must be valid JSON and the first byte must be '{'");
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw malformed('Policies must be a JSON object');
  const { Version: version, Statement: statementField } = document as Record<string, unknown>;
  if (version !== undefined && version !== '2012-10-17' && version !== '2008-10-17') throw malformed('Policy has an invalid version');
  if (statementField === undefined) throw malformed('Missing required field Statement');
  const raw = Array.isArray(statementField) ? statementField : [statementField];
  if (raw.length === 0) throw malformed('Missing required field Statement');
  const statements = raw.map((entry): Statement => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw malformed('Policy has an invalid statement');
    const field = entry as Record<string, unknown>;
    if (field.Effect !== 'Allow' && field.Effect !== 'Deny') throw malformed('Policy has an invalid effect');
    if ((field.Principal === undefined) === (field.NotPrincipal === undefined)) throw malformed('Missing required field Principal');
    // S3 takes NotPrincipal only with Deny: an Allow to everyone but someone is refused.
    if (field.NotPrincipal !== undefined && field.Effect === 'Allow') throw malformed('NotPrincipal is not allowed with Allow');
    if ((field.Action === undefined) === (field.NotAction === undefined)) throw malformed('Missing required field Action');
    if ((field.Resource === undefined) === (field.NotResource === undefined)) throw malformed('Missing required field Resource');
    const statement: Statement = { effect: field.Effect, conditions: conditionsOf(field.Condition) };
    if (field.Principal !== undefined) statement.principals = principalsOf(field.Principal, 'Principal');
    if (field.NotPrincipal !== undefined) statement.notPrincipals = principalsOf(field.NotPrincipal, 'NotPrincipal');
    if (field.Action !== undefined) statement.actions = list(field.Action, 'action');
    if (field.NotAction !== undefined) statement.notActions = list(field.NotAction, 'action');
    if (field.Resource !== undefined) statement.resources = list(field.Resource, 'resource');
    if (field.NotResource !== undefined) statement.notResources = list(field.NotResource, 'resource');
    for (const action of [...(statement.actions ?? []), ...(statement.notActions ?? [])]) checkAction(action);
    for (const resource of [...(statement.resources ?? []), ...(statement.notResources ?? [])]) checkResource(resource, bucketName);
    return statement;
  });
  return { statements };
}

/** Whether a principal entry names the request: `*`, its organization (id or `arn:aws:iam::<org>:root`), or its key (`…:user/<access key id>`). */
function names(entry: string, principal: PolicyPrincipal): boolean {
  if (entry === '*') return true;
  if (principal.anonymous) return false;
  if (entry === principal.orgId) return true;
  const arn = /^arn:aws:iam::([^:]*):(root|user\/(.+))$/.exec(entry);
  if (!arn || arn[1] !== principal.orgId) return false;
  return arn[2] === 'root' || arn[3] === principal.accessKeyId;
}

const anyMatch = (patterns: string[], value: string, caseInsensitive = false) =>
  patterns.some((pattern) => pattern === '*' || wildcard(pattern, caseInsensitive).test(value));

async function conditionHolds(condition: Condition, question: PolicyQuestion): Promise<boolean> {
  const value = await question.value(condition.key);
  if (condition.operator === 'Null')
    return condition.values.some((expected) => (expected.toLowerCase() === 'true') === (value === undefined));
  if (value === undefined) return condition.ifExists || NEGATED.has(condition.operator);
  const { values } = condition;
  switch (condition.operator) {
    case 'StringEquals':
    case 'ArnEquals':
      return values.includes(value);
    case 'StringNotEquals':
    case 'ArnNotEquals':
      return !values.includes(value);
    case 'StringEqualsIgnoreCase':
      return values.some((expected) => expected.toLowerCase() === value.toLowerCase());
    case 'StringNotEqualsIgnoreCase':
      return !values.some((expected) => expected.toLowerCase() === value.toLowerCase());
    case 'StringLike':
    case 'ArnLike':
      return anyMatch(values, value);
    case 'StringNotLike':
    case 'ArnNotLike':
      return !anyMatch(values, value);
    case 'Bool':
      return values.some((expected) => expected.toLowerCase() === value.toLowerCase());
    case 'IpAddress':
    case 'NotIpAddress': {
      const inside = values.some((range) => ipInRange(value, range));
      return condition.operator === 'IpAddress' ? inside : !inside;
    }
    default: {
      const number = Number(value);
      const compare = (expected: string): boolean => {
        const bound = Number(expected);
        switch (condition.operator) {
          case 'NumericEquals':
            return number === bound;
          case 'NumericNotEquals':
            return number !== bound;
          case 'NumericLessThan':
            return number < bound;
          case 'NumericLessThanEquals':
            return number <= bound;
          case 'NumericGreaterThan':
            return number > bound;
          default:
            return number >= bound;
        }
      };
      return !Number.isNaN(number) && (condition.operator === 'NumericNotEquals' ? values.every(compare) : values.some(compare));
    }
  }
}

function ipInRange(address: string, range: string): boolean {
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
  const family = isIP(plain);
  if (family === 0) return false;
  const [network, bits] = range.split('/');
  const networkFamily = isIP(network ?? '');
  if (networkFamily !== family) return false;
  const blocks = new BlockList();
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const prefix = bits === undefined ? (family === 4 ? 32 : 128) : Number(bits);
  if (!Number.isInteger(prefix)) return false;
  blocks.addSubnet(network!, prefix, type);
  return blocks.check(plain, type);
}

async function statementApplies(statement: Statement, question: PolicyQuestion): Promise<boolean> {
  const { principal } = question;
  if (statement.principals && !statement.principals.some((entry) => names(entry, principal))) return false;
  if (statement.notPrincipals?.some((entry) => names(entry, principal))) return false;
  if (statement.actions && !anyMatch(statement.actions, question.action, true)) return false;
  if (statement.notActions && anyMatch(statement.notActions, question.action, true)) return false;
  if (statement.resources && !anyMatch(statement.resources, question.resource)) return false;
  if (statement.notResources && anyMatch(statement.notResources, question.resource)) return false;
  for (const condition of statement.conditions) if (!(await conditionHolds(condition, question))) return false;
  return true;
}

/** What a policy says of a request: an explicit Deny wins, then an Allow; 'none' when no statement applies. */
export async function evaluatePolicy(policy: BucketPolicy, question: PolicyQuestion): Promise<'allow' | 'deny' | 'none'> {
  let allowed = false;
  for (const statement of policy.statements) {
    if (!(await statementApplies(statement, question))) continue;
    if (statement.effect === 'Deny') return 'deny';
    allowed = true;
  }
  return allowed ? 'allow' : 'none';
}

/** Whether some Allow of the policy is about this principal at all (then the bucket's name is no secret to it). */
export function sharesWith(policy: BucketPolicy, principal: PolicyPrincipal): boolean {
  return policy.statements.some(
    (statement) => statement.effect === 'Allow' && statement.principals?.some((entry) => names(entry, principal)) === true,
  );
}

/**
 * Whether a policy is public in S3's sense: an Allow to every principal (`*`) with no condition
 * that narrows who may use it: every organization's keys and unsigned requests.
 */
export function isPublicPolicy(policy: BucketPolicy): boolean {
  return policy.statements.some(
    (statement) =>
      statement.effect === 'Allow' &&
      statement.principals?.some((entry) => entry === '*' || /^arn:aws:iam::\*:/.test(entry)) === true &&
      statement.conditions.length === 0,
  );
}

/** Policies already parsed, by their text: the same few documents are evaluated on every request of their buckets. */
const parsed = new Map<string, BucketPolicy>();

/** A stored policy, parsed (it was checked when it was put). */
export function storedPolicy(text: string, bucketName: string): BucketPolicy {
  const key = `${bucketName}\u0000${text}`;
  let policy = parsed.get(key);
  if (!policy) {
    policy = parsePolicy(text, bucketName);
    if (parsed.size >= 1000) parsed.clear();
    parsed.set(key, policy);
  }
  return policy;
}

/**
 * The actions a policy may give another organization's keys: what is done to objects and what
 * lists them. A bucket's configuration (its ACL, policy, lifecycle, versioning, lock…), its
 * creation and deletion, and the changes of an object's ACL, retention and legal hold stay its
 * own organization's, whatever a policy says.
 */
const GRANTABLE = new Set(
  [
    's3:ListBucket',
    's3:ListBucketVersions',
    's3:ListBucketMultipartUploads',
    's3:ListMultipartUploadParts',
    's3:AbortMultipartUpload',
    's3:GetObject',
    's3:GetObjectVersion',
    's3:GetObjectAcl',
    's3:GetObjectVersionAcl',
    's3:GetObjectTagging',
    's3:GetObjectVersionTagging',
    's3:GetObjectAttributes',
    's3:GetObjectVersionAttributes',
    's3:PutObject',
    's3:PutObjectTagging',
    's3:PutObjectVersionTagging',
    's3:DeleteObject',
    's3:DeleteObjectVersion',
    's3:DeleteObjectTagging',
    's3:DeleteObjectVersionTagging',
  ].map((action) => action.toLowerCase()),
);

export const grantableToOthers = (action: string): boolean => GRANTABLE.has(action.toLowerCase());
