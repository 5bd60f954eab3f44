export type Scope = 'read' | 'write';
export type Role = 'owner' | 'member';

/** Who is calling: the member behind an API key or an OIDC access token. */
export interface Principal {
  orgId: string;
  memberId: string;
  role: Role;
  scopes: ReadonlySet<Scope>;
  /** The member's subject (audit `actor_sub`). */
  subject: string;
  /** `api_key`, or the token's issuer (audit `actor_realm`). */
  realm: string;
  /** The API key used, if any (audit `actor_token_id`). */
  tokenId: string | null;
  /** What the credential is called: the API key's name, or the access token's subject (getAccount). */
  credentialName: string;
  /** When the credential stops working: the key's expiry or the token's `exp`; null: never. */
  expiresAt: Date | null;
}

/** The actor of an audit event when it is not a request: the operator or the platform itself. */
export interface Actor {
  subject: string;
  realm: string;
  tokenId: string | null;
}

export const actorOf = (principal: Principal): Actor => ({
  subject: principal.subject,
  realm: principal.realm,
  tokenId: principal.tokenId,
});

export const SYSTEM_ACTOR: Actor = { subject: 'platform', realm: 'system', tokenId: null };
