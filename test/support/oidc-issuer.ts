// A local OIDC issuer for tests: real keys, a discovery document and a JWKS served over HTTP,
// and tokens signed like an identity provider's.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';

type KeyLike = CryptoKey;

export interface LocalIssuer {
  issuer: string;
  audience: string;
  /** A signed access token for `subject`; override any claim or the signing key. */
  token(subject: string, options?: { claims?: JWTPayload; expiresIn?: string; key?: KeyLike; alg?: string; kid?: string }): Promise<string>;
  /** A key pair this issuer does not publish. */
  foreignKey(): Promise<KeyLike>;
  close(): Promise<void>;
}

export async function startLocalIssuer(audience = 'https://api.cloudplatform.dev'): Promise<LocalIssuer> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'test-key-1', alg: 'RS256', use: 'sig' };
  let issuer = '';
  const server: Server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/.well-known/openid-configuration') res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks.json` }));
    else if (req.url === '/jwks.json') res.end(JSON.stringify({ keys: [jwk] }));
    else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    audience,
    async token(subject, options = {}) {
      return new SignJWT({ ...options.claims })
        .setProtectedHeader({ alg: options.alg ?? 'RS256', kid: options.kid ?? 'test-key-1' })
        .setIssuer((options.claims?.iss as string) ?? issuer)
        .setAudience((options.claims?.aud as string) ?? audience)
        .setSubject(subject)
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '5m')
        .sign(options.key ?? privateKey);
    },
    async foreignKey() {
      return (await generateKeyPair('RS256')).privateKey;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
