// An OpenID provider for the tests: panva's oidc-provider (the certified Node.js
// implementation) on a loopback port, with one confidential client, PKCE required,
// its development sign-in pages, RP-initiated logout, and accounts from the
// environment. Usage: node provider.mjs (settings in OIDC_TEST_SETTINGS, JSON).
import crypto from 'node:crypto';
import Provider from 'oidc-provider';

const settings = JSON.parse(process.env.OIDC_TEST_SETTINGS);
const accounts = settings.accounts; // {login: {sub, preferred_username, groups, ...}}

const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: crypto.randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' };

const issuer = `http://127.0.0.1:${settings.port}`;
const provider = new Provider(issuer, {
  clients: [{
    client_id: settings.client_id,
    client_secret: settings.client_secret,
    redirect_uris: settings.redirect_uris,
    post_logout_redirect_uris: settings.post_logout_redirect_uris,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [signing] },
  pkce: { methods: ['S256'], required: () => true },
  scopes: ['openid', 'profile', 'email', 'groups'],
  claims: {
    openid: ['sub'],
    profile: ['preferred_username', 'name'],
    email: ['email'],
    groups: ['groups'],
  },
  // The claims the scopes ask for go in the ID token itself.
  conformIdTokenClaims: false,
  findAccount: async (ctx, id) => {
    const account = accounts[id];
    if (!account) return undefined;
    return { accountId: id, claims: async () => ({ ...account, sub: account.sub || id }) };
  },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  ttl: { IdToken: 300, AccessToken: 300, AuthorizationCode: 60, Interaction: 300, Session: 3600, Grant: 3600 },
});
provider.proxy = false;
// Development interactions refuse nothing and say so on stderr; keep the test log readable.
process.on('warning', () => {});
const server = provider.listen(settings.port, '127.0.0.1', () => {
  process.stdout.write(`listening ${issuer}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
