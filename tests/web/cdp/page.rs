//! A page (tab) attached over its own flattened session: navigation waited for by lifecycle
//! events, script evaluation, waits resolved in the page by DOM events, real mouse clicks and
//! typing, viewports, screenshots, cookies and the console.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use super::connection::{CdpError, Connection, ConsoleEntry, exception_text};
use super::{ContextId, TIMEOUT};

/// A page in a [`super::Context`]; closed when dropped.
pub(crate) struct Page {
    pub(super) connection: Arc<Connection>,
    target: String,
    pub(super) session: String,
    // Keeps the context until the page is closed.
    _context: Arc<ContextId>,
}

/// A cookie as `Network.getCookies` reports it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cookie {
    pub(crate) name: String,
    pub(crate) value: String,
    pub(crate) domain: String,
    pub(crate) path: String,
    pub(crate) http_only: bool,
    pub(crate) secure: bool,
    /// `Strict`, `Lax` or `None`; `None` (no value) if the cookie did not say.
    pub(crate) same_site: Option<String>,
    /// A session cookie (no `Expires` or `Max-Age`).
    pub(crate) session: bool,
}

impl Page {
    /// Enables the domains every page uses, on a freshly attached session.
    pub(super) fn attached(context: Arc<ContextId>, target: String, session: String) -> Self {
        let page = Self {
            connection: Arc::clone(&context.connection),
            target,
            session,
            _context: context,
        };
        page.call("Page.enable", json!({}));
        page.call("Page.setLifecycleEventsEnabled", json!({ "enabled": true }));
        page.call("Runtime.enable", json!({}));
        page.call("Log.enable", json!({}));
        page
    }

    /// Any command on this page's session; panics with Chromium's error.
    pub(crate) fn call(&self, method: &str, params: Value) -> Value {
        self.try_call(method, params)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Any command on this page's session.
    pub(crate) fn try_call(&self, method: &str, params: Value) -> Result<Value, CdpError> {
        self.connection
            .call(Some(&self.session), method, params, TIMEOUT)
    }

    /// Loads `url` and waits for its `load` event.
    ///
    /// # Panics
    ///
    /// If the navigation fails (`net::ERR_…`: an HTTP error status is a page like any other)
    /// or does not load within [`TIMEOUT`].
    pub(crate) fn navigate(&self, url: &str) {
        let events = self
            .connection
            .subscribe(Some(&self.session), &["Page.lifecycleEvent"]);
        let navigated = self.call("Page.navigate", json!({ "url": url }));
        if let Some(error) = navigated["errorText"].as_str().filter(|e| !e.is_empty()) {
            panic!("navigate to {url}: {error}");
        }
        // A same-document navigation (a #fragment) has no loader and no load event.
        let Some(loader) = navigated["loaderId"].as_str() else {
            return;
        };
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let event = events
                .next(deadline, &format!("the load event of {url}"))
                .unwrap_or_else(|e| panic!("{e}"));
            let params = &event["params"];
            if params["name"] == "load" && params["loaderId"] == loader {
                return;
            }
        }
    }

    /// Runs `action` (a click on a link or a form's button, say) and waits for the main frame
    /// to navigate and load the new document; `action`'s result.
    ///
    /// # Panics
    ///
    /// If no new document loads within [`TIMEOUT`].
    pub(crate) fn expect_navigation<R>(&self, action: impl FnOnce() -> R) -> R {
        let events = self.connection.subscribe(
            Some(&self.session),
            &["Page.frameNavigated", "Page.lifecycleEvent"],
        );
        let result = action();
        let deadline = Instant::now() + TIMEOUT;
        let mut loaded = Vec::new();
        let mut navigated = None;
        loop {
            let event = events
                .next(deadline, "a navigation")
                .unwrap_or_else(|e| panic!("{e}"));
            let params = &event["params"];
            if event["method"] == "Page.frameNavigated" && params["frame"].get("parentId").is_none()
            {
                navigated = params["frame"]["loaderId"].as_str().map(str::to_owned);
            } else if params["name"] == "load" {
                loaded.push(params["loaderId"].as_str().unwrap_or_default().to_owned());
            }
            if navigated
                .as_ref()
                .is_some_and(|loader| loaded.contains(loader))
            {
                return result;
            }
        }
    }

    /// The value of the JavaScript expression `js` (awaited if it is a promise), as JSON.
    ///
    /// # Panics
    ///
    /// If it throws or rejects (with the exception's text), or does not settle within
    /// [`TIMEOUT`].
    pub(crate) fn eval(&self, js: &str) -> Value {
        self.try_eval(js)
            .unwrap_or_else(|e| panic!("eval `{js}`: {e}"))
    }

    /// [`Page::eval`], with the exception as [`CdpError::Exception`].
    pub(crate) fn try_eval(&self, js: &str) -> Result<Value, CdpError> {
        self.evaluate(js, TIMEOUT)
    }

    fn evaluate(&self, js: &str, timeout: Duration) -> Result<Value, CdpError> {
        let mut answer = self.connection.call(
            Some(&self.session),
            "Runtime.evaluate",
            json!({ "expression": js, "awaitPromise": true, "returnByValue": true }),
            timeout,
        )?;
        if let Some(details) = answer.get("exceptionDetails") {
            return Err(CdpError::Exception(exception_text(details)));
        }
        let result = &mut answer["result"];
        Ok(match result.get_mut("value") {
            Some(value) => value.take(),
            // NaN, Infinity, -0, bigints.
            None => result
                .get_mut("unserializableValue")
                .map(Value::take)
                .unwrap_or_default(),
        })
    }

    /// Waits until the JavaScript expression `predicate` is truthy, and returns its value.
    ///
    /// The wait runs in the page: a promise that checks the predicate now, then again on
    /// every DOM mutation and on `input`, `change`, `load`, `focusin`, `focusout`,
    /// `hashchange` and `popstate` events, and rejects after `timeout`. State that reaches
    /// neither the DOM nor those events is not seen: put what a test waits for in the DOM.
    /// A predicate that throws counts as false. The wait cannot outlive the document: across
    /// a navigation, use [`Page::expect_navigation`].
    ///
    /// # Panics
    ///
    /// On timeout, with the page's URL, the predicate's last exception and the start of the
    /// page's text.
    pub(crate) fn wait_for(&self, predicate: &str, timeout: Duration) -> Value {
        let millis = timeout.as_millis();
        let js = format!(
            r"new Promise((resolve, reject) => {{
  let last = null;
  const check = () => {{
    try {{ const value = (() => ({predicate}))(); last = null; return value; }}
    catch (e) {{ last = e; return false; }}
  }};
  const now = check();
  if (now) {{ resolve(now); return; }}
  const types = ['input', 'change', 'load', 'focusin', 'focusout', 'hashchange', 'popstate'];
  const stop = () => {{
    observer.disconnect();
    clearTimeout(timer);
    for (const type of types) removeEventListener(type, recheck, true);
  }};
  const recheck = () => {{ const value = check(); if (value) {{ stop(); resolve(value); }} }};
  const observer = new MutationObserver(recheck);
  observer.observe(document, {{ subtree: true, childList: true, attributes: true, characterData: true }});
  for (const type of types) addEventListener(type, recheck, true);
  const timer = setTimeout(() => {{
    stop();
    reject(new Error('not true within {millis} ms' + (last ? '; it last threw ' + last : '')));
  }}, {millis});
}})"
        );
        // The page's own timer rejects first; this bound is for a page that hangs.
        match self.evaluate(&js, timeout + TIMEOUT) {
            Ok(value) => value,
            Err(error) => {
                let hint = if error.to_string().contains("navigated") {
                    "\n(the page navigated away: wait across a navigation with expect_navigation)"
                } else {
                    ""
                };
                let context = self
                    .try_eval("[location.href, (document.body?.innerText ?? '').slice(0, 2000)]")
                    .unwrap_or_default();
                let string = |value: &Value| value.as_str().unwrap_or_default().to_owned();
                panic!(
                    "wait_for `{predicate}`: {error}{hint}\nURL: {}\npage text: {}",
                    string(&context[0]),
                    string(&context[1])
                );
            }
        }
    }

    /// The page's URL.
    pub(crate) fn url(&self) -> String {
        self.eval("location.href")
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Clicks the element `selector` matches as a user would: scrolled into view, a real
    /// left click (`Input.dispatchMouseEvent`, which gives the page user activation) at its
    /// centre.
    ///
    /// # Panics
    ///
    /// If nothing matches, or the element is disabled, has no size, or is covered there by
    /// another element.
    pub(crate) fn click(&self, selector: &str) {
        let js = format!(
            r"((selector) => {{
  const element = document.querySelector(selector);
  if (!element) return 'matches nothing';
  if (element.disabled) return 'is disabled';
  element.scrollIntoView({{ block: 'center', inline: 'center' }});
  const box = element.getBoundingClientRect();
  if (box.width === 0 || box.height === 0) return 'has no size (hidden?)';
  const x = box.left + box.width / 2, y = box.top + box.height / 2;
  const hit = document.elementFromPoint(x, y);
  if (hit !== element && !element.contains(hit)) {{
    return 'is covered at its centre by ' + (hit ? hit.outerHTML.slice(0, 200) : 'nothing');
  }}
  return [x, y];
}})({})",
            Value::from(selector)
        );
        let point = self.eval(&js);
        let (Some(x), Some(y)) = (point[0].as_f64(), point[1].as_f64()) else {
            panic!(
                "click `{selector}`: it {}",
                point.as_str().unwrap_or_default()
            );
        };
        for (kind, buttons) in [("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 0)] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({
                    "type": kind, "x": x, "y": y, "button": "left",
                    "buttons": buttons, "clickCount": 1,
                }),
            );
        }
    }

    /// Replaces the value of the field `selector` matches by typing `text` into it (focus,
    /// clear, `Input.insertText`: `input` events fire as for a user).
    ///
    /// # Panics
    ///
    /// If nothing matches or the element cannot take the focus.
    pub(crate) fn fill(&self, selector: &str, text: &str) {
        let js = format!(
            r"((selector) => {{
  const element = document.querySelector(selector);
  if (!element) return 'matches nothing';
  element.focus();
  if (document.activeElement !== element) return 'cannot take the focus';
  element.value = '';
  return true;
}})({})",
            Value::from(selector)
        );
        let focused = self.eval(&js);
        assert!(
            focused == true,
            "fill `{selector}`: it {}",
            focused.as_str().unwrap_or_default()
        );
        self.call("Input.insertText", json!({ "text": text }));
    }

    /// The rendered text (`innerText`) of the element `selector` matches.
    ///
    /// # Panics
    ///
    /// If nothing matches.
    pub(crate) fn text(&self, selector: &str) -> String {
        let js = format!(
            "document.querySelector({})?.innerText ?? null",
            Value::from(selector)
        );
        match self.eval(&js) {
            Value::String(text) => text,
            _ => panic!("text `{selector}`: it matches nothing"),
        }
    }

    /// Emulates a `width`×`height` CSS pixel viewport at one device pixel per CSS pixel;
    /// `mobile` also emulates a phone (the meta viewport applies, touch events on).
    pub(crate) fn set_viewport(&self, width: u32, height: u32, mobile: bool) {
        self.set_viewport_scaled(width, height, 1.0, mobile);
    }

    /// [`Page::set_viewport`] with `scale` device pixels per CSS pixel.
    pub(crate) fn set_viewport_scaled(&self, width: u32, height: u32, scale: f64, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile }),
        );
        self.call(
            "Emulation.setTouchEmulationEnabled",
            json!({ "enabled": mobile, "maxTouchPoints": if mobile { 5 } else { 1 } }),
        );
    }

    /// A PNG of the whole page (beyond the viewport), written to `path`; its bytes.
    ///
    /// # Panics
    ///
    /// If Chromium cannot capture it or the file cannot be written.
    pub(crate) fn screenshot_png(&self, path: &Path) -> Vec<u8> {
        let metrics = self.call("Page.getLayoutMetrics", json!({}));
        let size = &metrics["cssContentSize"];
        let shot = self.call(
            "Page.captureScreenshot",
            json!({
                "format": "png",
                "captureBeyondViewport": true,
                "clip": { "x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1 },
            }),
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .expect("Page.captureScreenshot returns base64");
        std::fs::write(path, &png)
            .unwrap_or_else(|e| panic!("write the screenshot {}: {e}", path.display()));
        png
    }

    /// The cookies the page's URL sees (`Network.getCookies`), with their attributes.
    pub(crate) fn cookies(&self) -> Vec<Cookie> {
        let answer = self.call("Network.getCookies", json!({}));
        let string = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        answer["cookies"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|cookie| Cookie {
                name: string(&cookie["name"]),
                value: string(&cookie["value"]),
                domain: string(&cookie["domain"]),
                path: string(&cookie["path"]),
                http_only: cookie["httpOnly"] == true,
                secure: cookie["secure"] == true,
                same_site: cookie["sameSite"].as_str().map(str::to_owned),
                session: cookie["session"] == true,
            })
            .collect()
    }

    /// Everything the page has logged: console calls, the Log domain's entries (CSP
    /// violations, failed loads) and uncaught exceptions, in order. A round trip to the page
    /// first, so whatever it logged before this call is in.
    pub(crate) fn console(&self) -> Vec<ConsoleEntry> {
        // (Between two documents there is nothing to evaluate in; nothing to wait for either.)
        let _ = self.try_eval("0");
        self.connection.console(&self.session)
    }

    /// The errors among [`Page::console`]: `error` level, uncaught exceptions included.
    pub(crate) fn errors(&self) -> Vec<ConsoleEntry> {
        let mut entries = self.console();
        entries.retain(|entry| entry.level == "error");
        entries
    }

    /// # Panics
    ///
    /// If the page logged an error or threw (CSP violations included), listing them.
    pub(crate) fn assert_no_errors(&self) {
        let errors = self.errors();
        assert!(
            errors.is_empty(),
            "{} logged errors:\n{}",
            self.url(),
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        self.connection.forget(&self.session);
        self.connection.send_and_forget(
            None,
            "Target.closeTarget",
            json!({ "targetId": self.target }),
        );
    }
}
