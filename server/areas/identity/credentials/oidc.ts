// jose is loaded with the first token to verify: a server without OIDC never needs it.
import type { JWTVerifyGetKey } from 'jose';
import type { OidcConfig } from '../../../config.ts';

/**
 * Verifies OIDC access tokens (JWTs) against the issuer's published keys: signature with an
 * allow-list of asymmetric algorithms (never `none` or HMAC, as RFC 8725 advises), `iss`, `aud`
 * and `exp`. The keys are fetched from the issuer's JWKS and cached by jose.
 */
export interface VerifiedToken {
  subject: string;
  issuer: string;
  /** The token's `exp`. */
  expiresAt: Date;
}

const ALGORITHMS = ['RS256', 'PS256', 'ES256', 'ES384', 'EdDSA'];

export class OidcVerifier {
  private keys: JWTVerifyGetKey | undefined;

  private readonly config: OidcConfig;

  constructor(config: OidcConfig) {
    this.config = config;
  }

  /** The token's subject and issuer, or undefined when the token is not valid. */
  async verify(token: string): Promise<VerifiedToken | undefined> {
    try {
      const { jwtVerify } = await import('jose');
      const { payload } = await jwtVerify(token, await this.jwks(), {
        issuer: this.config.issuer,
        audience: this.config.audience,
        algorithms: ALGORITHMS,
        requiredClaims: ['sub', 'exp'],
      });
      return typeof payload.sub === 'string' && payload.sub !== ''
        ? { subject: payload.sub, issuer: this.config.issuer, expiresAt: new Date(payload.exp! * 1000) }
        : undefined;
    } catch {
      return undefined;
    }
  }

  private async jwks(): Promise<JWTVerifyGetKey> {
    if (!this.keys) {
      const jwksUrl = this.config.jwksUrl ?? (await this.discoverJwksUrl());
      const { createRemoteJWKSet } = await import('jose');
      this.keys = createRemoteJWKSet(new URL(jwksUrl));
    }
    return this.keys;
  }

  private async discoverJwksUrl(): Promise<string> {
    const response = await fetch(`${this.config.issuer}/.well-known/openid-configuration`);
    if (!response.ok) throw new Error(`OIDC discovery failed with ${response.status}`);
    const document = (await response.json()) as { jwks_uri?: string };
    if (!document.jwks_uri) throw new Error('OIDC discovery document has no jwks_uri');
    return document.jwks_uri;
  }
}

/** A JWT has three base64url parts; an API key has our prefix. */
export function looksLikeJwt(credential: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(credential);
}
