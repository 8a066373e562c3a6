// The smoke test's page script: registers a passkey, then signs in with it, and shows each
// outcome as JSON in #result (data-state: registered, asserted or error) for the test to read.
'use strict';

const result = document.getElementById('result');
const show = (state, value) => {
  result.textContent = JSON.stringify(value);
  result.dataset.state = state;
};
const base64url = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer)))
  .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const fromBase64url = (text) => Uint8Array.from(
  atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));

// The registered credential's public key (SubjectPublicKeyInfo), to check assertions with.
let publicKey = null;

async function register() {
  const credential = await navigator.credentials.create({ publicKey: {
    rp: { id: 'localhost', name: 'approval-gate harness' },
    user: { id: new TextEncoder().encode('approver-1'), name: 'alice', displayName: 'Alice' },
    challenge: crypto.getRandomValues(new Uint8Array(32)),
    pubKeyCredParams: [{ type: 'public-key', alg: -7 }],
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    timeout: 20000,
  } });
  publicKey = credential.response.getPublicKey();
  return { id: credential.id, algorithm: credential.response.getPublicKeyAlgorithm() };
}

// An ECDSA signature as WebAuthn gives it (DER: a SEQUENCE of two INTEGERs) as the r || s
// that WebCrypto verifies.
function rawSignature(der) {
  const raw = new Uint8Array(64);
  let at = 2;
  for (const offset of [0, 32]) {
    const length = der[at + 1];
    let integer = der.slice(at + 2, at + 2 + length);
    while (integer.length > 32 && integer[0] === 0) integer = integer.slice(1);
    raw.set(integer, offset + 32 - integer.length);
    at += 2 + length;
  }
  return raw;
}

async function authenticate() {
  const challenge = fromBase64url(new URLSearchParams(location.search).get('challenge'));
  const credential = await navigator.credentials.get({ publicKey: {
    rpId: 'localhost', challenge, userVerification: 'required', timeout: 20000,
  } });
  const response = credential.response;
  const authenticatorData = new Uint8Array(response.authenticatorData);
  const clientHash = new Uint8Array(await crypto.subtle.digest('SHA-256', response.clientDataJSON));
  const signed = new Uint8Array(authenticatorData.length + clientHash.length);
  signed.set(authenticatorData);
  signed.set(clientHash, authenticatorData.length);
  const key = await crypto.subtle.importKey(
    'spki', publicKey, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
  const signatureValid = await crypto.subtle.verify(
    { name: 'ECDSA', hash: 'SHA-256' }, key, rawSignature(new Uint8Array(response.signature)), signed);
  return {
    id: credential.id,
    clientDataJSON: new TextDecoder().decode(response.clientDataJSON),
    flags: authenticatorData[32],
    userHandle: base64url(response.userHandle),
    signatureValid,
  };
}

for (const [button, action, state] of [['register', register, 'registered'], ['login', authenticate, 'asserted']]) {
  document.getElementById(button).addEventListener('click', async () => {
    result.dataset.state = 'busy';
    try {
      show(state, await action());
    } catch (error) {
      show('error', { name: error.name, message: error.message });
    }
  });
}
