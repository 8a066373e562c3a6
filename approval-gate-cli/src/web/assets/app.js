// approval-gate's page script: WebAuthn ceremonies and the live pending list.
// No framework, nothing from elsewhere; the Content-Security-Policy allows this file only.
"use strict";

const b64url = {
  encode(buffer) {
    const bytes = new Uint8Array(buffer);
    let text = "";
    for (const byte of bytes) text += String.fromCharCode(byte);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  },
  decode(text) {
    const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    const padded = base64 + "===".slice((base64.length + 3) % 4);
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  },
};

// The session's page key: every state change sends it as X-CSRF-Token. Sign-in hands it to
// this script alone, and it lives in this origin's storage, which, unlike a cookie, no other
// port of the host can read; no page carries it. So a copied session cookie decides nothing.
const PAGE_KEY = "approval-gate-page-key";

function csrf() {
  try {
    return localStorage.getItem(PAGE_KEY) || "";
  } catch (_) {
    return "";
  }
}

function keep(key) {
  try {
    if (key) localStorage.setItem(PAGE_KEY, key);
    else localStorage.removeItem(PAGE_KEY);
  } catch (_) {
    // No storage: this browser can read but not decide; the server says so.
  }
}

function say(id, text, ok) {
  const element = document.getElementById(id);
  if (!element) return;
  element.textContent = text;
  element.className = "result " + (ok ? "ok" : "error");
}

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf() },
    body: JSON.stringify(body),
  });
  let answer;
  try {
    answer = await response.json();
  } catch (_) {
    answer = { ok: false, message: "the server answered " + response.status };
  }
  return { ok: response.ok && answer.ok !== false, answer };
}

function assertionJson(credential) {
  const r = credential.response;
  return {
    credentialId: b64url.encode(credential.rawId),
    authenticatorData: b64url.encode(r.authenticatorData),
    clientDataJSON: b64url.encode(r.clientDataJSON),
    signature: b64url.encode(r.signature),
    userHandle: r.userHandle ? b64url.encode(r.userHandle) : null,
  };
}

async function getAssertion(challenge, rpId, credentials) {
  const allow = credentials
    .filter((id) => id.length > 0)
    .map((id) => ({ type: "public-key", id: b64url.decode(id) }));
  return navigator.credentials.get({
    publicKey: {
      challenge: b64url.decode(challenge),
      rpId,
      allowCredentials: allow,
      userVerification: "required",
      timeout: 120000,
    },
  });
}

// Approve: the challenge is the digest of the decision statement this approver signs.
function setUpApprove() {
  const button = document.getElementById("approve");
  if (!button) return;
  button.addEventListener("click", async () => {
    button.disabled = true;
    say("approve-result", "Waiting for your passkey…", true);
    try {
      const d = button.dataset;
      const credential = await getAssertion(d.challenge, d.rp, d.credentials.split(","));
      const { ok, answer } = await post(d.url, assertionJson(credential));
      say("approve-result", answer.message || (ok ? "approved" : "refused"), ok);
      if (ok) setTimeout(() => location.reload(), 800);
      else button.disabled = false;
    } catch (error) {
      say("approve-result", "Nothing was approved: " + error.message, false);
      button.disabled = false;
    }
  });
}

// Approve and allow more like it: the first assertion signs the allowance statement's
// challenge (the words above the button are what it says), exactly as an approval signs the
// decision statement's; the second approves the request itself, unless this approver has
// approved it already (the button then carries no approve URL).
function setUpAllow() {
  const button = document.getElementById("allow");
  if (!button) return;
  button.addEventListener("click", async () => {
    button.disabled = true;
    const d = button.dataset;
    const credentials = d.credentials.split(",");
    try {
      say("allow-result", "Waiting for your passkey, for the allowance…", true);
      const signed = await getAssertion(d.challenge, d.rp, credentials);
      const granted = await post(d.url, {
        assertion: assertionJson(signed),
        allowance: JSON.parse(d.allowance),
      });
      if (!granted.ok) throw new Error(granted.answer.message || "refused");
      if (!d.approveUrl) {
        // This approver has approved the request already: nothing more to sign.
        say("allow-result", granted.answer.message, true);
        setTimeout(() => location.assign("/allowances"), 800);
        return;
      }
      say("allow-result", granted.answer.message + "; now your passkey, for this request…", true);
      const approval = await getAssertion(d.approveChallenge, d.rp, credentials);
      const { ok, answer } = await post(d.approveUrl, assertionJson(approval));
      say("allow-result", granted.answer.message + "; " + (answer.message || ""), ok);
      if (ok) setTimeout(() => location.assign("/allowances"), 800);
    } catch (error) {
      say("allow-result", "Not done: " + error.message, false);
      button.disabled = false;
    }
  });
}

// Sign a proposed allowance: the challenge is the digest of the statement this approver
// signs over the allowance shown above the button, as the server read it from the store;
// only the assertion is posted, and the server builds the statement again.
function setUpCosign() {
  const button = document.getElementById("cosign");
  if (!button) return;
  button.addEventListener("click", async () => {
    button.disabled = true;
    say("cosign-result", "Waiting for your passkey…", true);
    try {
      const d = button.dataset;
      const credential = await getAssertion(d.challenge, d.rp, d.credentials.split(","));
      const { ok, answer } = await post(d.url, assertionJson(credential));
      say("cosign-result", answer.message || (ok ? "signed" : "refused"), ok);
      if (ok) setTimeout(() => location.assign("/allowances"), 800);
      else button.disabled = false;
    } catch (error) {
      say("cosign-result", "Nothing was signed: " + error.message, false);
      button.disabled = false;
    }
  });
}

function setUpSignIn() {
  const button = document.getElementById("signin");
  if (!button) return;
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const begin = await post("/signin/begin", {});
      if (!begin.ok) throw new Error(begin.answer.message);
      const credential = await getAssertion(begin.answer.challenge, begin.answer.rpId, []);
      const { ok, answer } = await post("/signin/finish", assertionJson(credential));
      if (!ok) throw new Error(answer.message);
      keep(answer.key);
      say("signin-result", "Signed in as " + answer.principal, true);
      location.assign(button.dataset.next || "/");
    } catch (error) {
      say("signin-result", "Not signed in: " + error.message, false);
      button.disabled = false;
    }
  });
}

function setUpEnroll() {
  const button = document.getElementById("enroll");
  if (!button) return;
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      // The code the terminal shows beside the link: without it the link enrolls nothing.
      const code = document.getElementById("enroll-code").value;
      const options = await post(button.dataset.url + "/options", { code });
      if (!options.ok) throw new Error(options.answer.message);
      const o = options.answer;
      const credential = await navigator.credentials.create({
        publicKey: {
          rp: { id: o.rpId, name: "approval-gate" },
          user: { id: b64url.decode(o.userId), name: o.principal, displayName: o.principal },
          challenge: b64url.decode(o.challenge),
          pubKeyCredParams: [{ type: "public-key", alg: -7 }],
          authenticatorSelection: { residentKey: "required", userVerification: "required" },
          attestation: "none",
          timeout: 300000,
        },
      });
      const r = credential.response;
      const { ok, answer } = await post(button.dataset.url, {
        credentialId: b64url.encode(credential.rawId),
        authenticatorData: b64url.encode(r.getAuthenticatorData()),
        clientDataJSON: b64url.encode(r.clientDataJSON),
        code,
      });
      say("enroll-result", answer.message, ok);
      if (!ok) button.disabled = false;
    } catch (error) {
      say("enroll-result", "No passkey was enrolled: " + error.message, false);
      button.disabled = false;
    }
  });
}

// Deny, revoke and sign out: posted by this script, with the page key as a header, then the
// page the server sends us to is opened. A refusal is shown beside the button.
function setUpForms() {
  for (const form of document.querySelectorAll("form[method=post]")) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = form.querySelector("button");
      if (button) button.disabled = true;
      const signOut = form.getAttribute("action") === "/signout";
      try {
        const response = await fetch(form.getAttribute("action"), {
          method: "POST",
          credentials: "same-origin",
          headers: {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-CSRF-Token": csrf(),
          },
          body: new URLSearchParams(new FormData(form)),
        });
        if (response.ok) {
          if (signOut) keep("");
          location.assign(response.url);
          return;
        }
        const text = await response.text();
        const page = new DOMParser().parseFromString(text, "text/html");
        const problem = page.querySelector("main .error");
        throw new Error(problem ? problem.textContent : "the server answered " + response.status);
      } catch (error) {
        const result = form.querySelector(".result");
        if (result) {
          result.textContent = "Refused: " + error.message;
          result.className = "result error";
        }
        if (button) button.disabled = false;
      }
    });
  }
}

// The pending list follows the store: each event says something changed, and the list is
// read again from the server, already escaped there. A browser opens at most six connections
// to a host over HTTP/1.1, so one tab of this origin holds the event stream (the holder of a
// Web Lock) and tells the others over a BroadcastChannel; when it closes, the next takes over.
function setUpLive() {
  const region = document.getElementById("pending");
  if (!region || !window.EventSource) return;
  let busy = false;
  let again = false;
  async function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const response = await fetch(region.dataset.fragment, { credentials: "same-origin" });
      if (response.ok) {
        region.innerHTML = await response.text();
        region.dataset.version = String(Number(region.dataset.version || "0") + 1);
      }
    } finally {
      busy = false;
      if (again) {
        again = false;
        refresh();
      }
    }
  }
  const channel = window.BroadcastChannel ? new BroadcastChannel("approval-gate-live") : null;
  const changed = () => {
    refresh();
    if (channel) channel.postMessage("change");
  };
  function follow(handedOver) {
    const events = new EventSource(region.dataset.live);
    events.addEventListener("change", changed);
    // Whatever changed while no stream was open (a restart, a lost connection, the tab that
    // held it closed) is read now.
    let opened = false;
    events.addEventListener("open", () => {
      if (opened || handedOver) changed();
      opened = true;
      document.body.dataset.live = "open";
    });
  }
  if (!channel || !navigator.locks) {
    follow(false);
    return;
  }
  channel.addEventListener("message", (event) => {
    if (event.data === "change") refresh();
  });
  document.body.dataset.live = "shared";
  let waited = false;
  navigator.locks.request("approval-gate-live", { ifAvailable: true }, (lock) => {
    if (lock) {
      follow(false);
      return new Promise(() => {});
    }
    waited = true;
    return navigator.locks.request("approval-gate-live", () => {
      follow(waited);
      return new Promise(() => {});
    });
  });
}

setUpApprove();
setUpAllow();
setUpCosign();
setUpSignIn();
setUpEnroll();
setUpForms();
setUpLive();
