//! The `#[requires_approval]` attribute of [approval-gate]: a function's body runs only inside
//! an approved, single-use execution, on the exact payload a human approved.
//!
//! This crate is an implementation detail. Depend on `approval-gate` and use the attribute as
//! `approval_gate::requires_approval` (feature `macros`, on by default); the generated code
//! names `::approval_gate` (see the `crate` argument when a crate re-exports it).
//!
//! The attribute is a pipeline: `args` and `item` parse the tokens, `valid` checks every rule
//! and reports every broken one spanned on the tokens at fault, `expand` writes the guarded
//! function, or, when a rule is broken, the same signature with an unreachable body.
//!
//! The boundary it draws, the grant, what to put inside the body and what happens on a crash
//! are in [docs/trusted-execution.md][trusted].
//!
//! [approval-gate]: https://docs.rs/approval-gate
//! [trusted]: https://github.com/approval-gate/approval-gate/blob/main/docs/trusted-execution.md

mod args;
mod expand;
mod item;
mod valid;

use proc_macro::TokenStream;

use crate::args::Args;
use crate::item::GuardedFn;

/// Runs the body of a function only inside an approved, single-use execution
/// (`Gate::execute_approved`), on the payload the human approved.
///
/// ```
/// use approval_gate::{Claim, CanonicalPayload, Decision, Error, Gate, NewRequest};
/// use approval_gate::requires_approval;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
/// struct Email {
///     to: String,
///     subject: String,
/// }
///
/// struct Mailer {
///     outbox: Vec<Email>,
/// }
///
/// impl Mailer {
///     #[requires_approval(operation = "smtp.send")]
///     fn send(&mut self, #[payload] email: Email, approval: Claim<'_>) -> Result<usize, Error> {
///         // Here `email: &Email` is the approved payload and `approval: &Grant<Email>` the
///         // proof to hand to lower-level code.
///         approval.assert_active()?; // right before the side effect
///         self.outbox.push(email.clone());
///         Ok(self.outbox.len())
///     }
/// }
///
/// # let dir = tempfile::tempdir()?;
/// let gate = Gate::open(dir.path().join("approvals"))?;
/// let email = Email { to: "alice@example.com".into(), subject: "Invoice 1042".into() };
/// let action = "send invoice 1042 to alice@example.com";
///
/// // The agent asks; a human approves in their terminal (`approval-gate approve <id>`).
/// let ask = NewRequest::new(action, "the invoice is due")
///     .operation("smtp.send")
///     .payload(CanonicalPayload::from_serialize(&email)?);
/// let id = gate.request_approval(ask)?.request.id();
/// gate.approve(id, &Decision::by("alice"))?;
///
/// // The caller hands over the payload it intends to run and the approval it claims.
/// let mut mailer = Mailer { outbox: Vec::new() };
/// assert_eq!(mailer.send(email.clone(), Claim::new(&gate, id, action))?, 1);
///
/// // Once only: a replay is refused and the body does not run again.
/// let replay = mailer.send(email, Claim::new(&gate, id, action));
/// assert!(matches!(replay, Err(Error::AlreadyConsumed(_))));
/// assert_eq!(mailer.outbox.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # The calling convention
///
/// The function declares what it needs and the caller supplies it:
///
/// - **one parameter marked `#[payload]`**: the value the approval is bound to, by value, of a
///   type that is `Serialize + DeserializeOwned`. The caller passes the payload it intends to
///   run; it is compared, as canonical JSON, with the approved one.
/// - **one parameter of type `Claim<'_>`** (any path whose last segment is `Claim`), by
///   value: `Claim::new(&gate, id, action)` names the gate, the request and the exact action
///   text the human approved.
/// - **a `Result<_, E>` return type** (any path whose last segment is `Result`, so aliases
///   such as `io::Result<T>` or your crate's `Result<T>` work) with
///   `E: From<approval_gate::Error> + Display`: a refusal is returned as `Err(E::from(error))`,
///   and an error from the body is written to the audit log with `Display`.
///
/// Inside the body the two parameters' names mean something else, and the caller's values
/// cannot be reached under any name:
///
/// - the payload's name is a `&T`: the **approved** payload, deserialized from the approved
///   canonical bytes, which serialize back to exactly those bytes (a lossy type is refused);
/// - the approval's name is a `&Grant<T>`: the proof of the consume, to pass to lower-level
///   functions that take `&Grant<T>`, and whose `assert_active()` re-checks the expiry. Call
///   it immediately before the side effect.
///
/// `return` and `?` work as in any function: the body runs in a closure (an `async` block for
/// an `async fn`) whose type is the function's return type.
///
/// # What a call does
///
/// Bind the caller's payload, the operation and the action text; consume the approval (it
/// must be approved, unexpired, unconsumed, unrevoked, and match in every byte); record
/// `execution_started` durably; check the expiry again; run the body; record
/// `execution_finished` with its outcome. Any refusal returns `Err` without running the body.
/// A consumed approval is spent whatever the body does: it is never retried.
///
/// # Arguments
///
/// - `operation = "smtp.send"` (required): the operation the approval must be bound to:
///   lowercase ASCII letters, digits and `_` in segments joined by dots, at most 128 bytes, as
///   the gate requires (`approval_gate::check_operation_name`).
/// - `crate = path` (optional): where `approval_gate` is, for code that reaches it through a
///   re-export, e.g. `crate = my_platform::approval_gate`. Default: `::approval_gate`.
///
/// # Supported functions
///
/// Free functions and methods (`&self`, `&mut self`, `self`, `self: Box<Self>`), sync and
/// `async`, in inherent impls, trait impls and trait default methods; with generics, lifetimes,
/// where clauses, `impl Trait` arguments and `impl Trait` inside the returned `Result`. The
/// signature, visibility, attributes and docs are kept token for token, minus the `#[payload]`
/// marker.
///
/// Refused at compile time, with an error on the tokens at fault: a missing, empty, invalid or
/// repeated `operation`; an unknown argument; `const fn`, `unsafe fn`, `extern` ABIs and
/// variadics; a declaration without a body; no `#[payload]` parameter, or two, or one that is
/// `self`, `mut` or a pattern; no `Claim` parameter, or two, or one taken by reference, or
/// that is `mut` or a pattern; a return type that is not a `Result`, or whose error type is not
/// `From<approval_gate::Error> + Display`; a payload type that is not
/// `Serialize + DeserializeOwned`. On any such error the function is still emitted, with an
/// unreachable body, so the rest of the crate keeps type-checking against its signature.
///
/// The expansion, step by step, is in [docs/trusted-execution.md][trusted].
///
/// [trusted]: https://github.com/approval-gate/approval-gate/blob/main/docs/trusted-execution.md
#[proc_macro_attribute]
pub fn requires_approval(args: TokenStream, item: TokenStream) -> TokenStream {
    requires_approval_impl(args.into(), item.into()).into()
}

/// Parse, validate, expand.
fn requires_approval_impl(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let function: GuardedFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(error) => return expand::not_a_function(&error, item),
    };
    match valid::validate(Args::parse(args), &function) {
        Ok(guarded) => expand::guarded(&guarded),
        Err(error) => expand::fallback(&function, &error),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use proc_macro2::{Delimiter, TokenStream, TokenTree};

    /// The "equivalent code without the macro" in docs/trusted-execution.md is the expansion
    /// of the example above it, token for token.
    #[test]
    fn the_documented_expansion_is_the_real_one() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/trusted-execution.md");
        let doc = std::fs::read_to_string(&path).expect("docs/trusted-execution.md");
        let block = |marker: &str| -> TokenStream {
            let start = doc.find(marker).expect(marker) + marker.len();
            let code = &doc[start..];
            let code = &code[code.find("```rust\n").expect("a rust block") + 8..];
            code[..code.find("```").expect("the end of the block")]
                .parse()
                .expect("rust tokens")
        };
        let input = block("<!-- expansion input -->");
        let expected = block("<!-- expansion output -->");

        let mut input = input.into_iter();
        let (Some(TokenTree::Punct(_)), Some(TokenTree::Group(attr))) =
            (input.next(), input.next())
        else {
            panic!("the input starts with #[requires_approval(...)]");
        };
        let mut attr = attr.stream().into_iter();
        attr.next(); // requires_approval
        let Some(TokenTree::Group(args)) = attr.next() else {
            panic!("#[requires_approval(...)] has arguments");
        };
        let actual = super::requires_approval_impl(args.stream(), input.collect());
        assert_eq!(flatten(actual), flatten(expected));
    }

    /// A lower-level function shown in docs/trusted-execution.md that takes a `&Grant<T>`
    /// sends the payload the grant holds: it takes no second `T`, which its caller could pick
    /// freely while passing a grant for another payload.
    #[test]
    fn documented_side_effects_send_the_grants_payload() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/trusted-execution.md");
        let doc = std::fs::read_to_string(&path).expect("docs/trusted-execution.md");
        let mut checked = 0;
        for block in doc.split("```rust\n").skip(1) {
            let code = &block[..block.find("```").expect("the end of the block")];
            // Blocks of bare statements are not items; the functions worth checking are.
            let Ok(file) = syn::parse_file(code) else {
                continue;
            };
            for signature in signatures(&file.items) {
                let types: Vec<_> = signature
                    .inputs
                    .iter()
                    .filter_map(|input| match input {
                        syn::FnArg::Typed(typed) => Some(&*typed.ty),
                        syn::FnArg::Receiver(_) => None,
                    })
                    .collect();
                for granted in types.iter().filter_map(|ty| grant_of(ty)) {
                    checked += 1;
                    let granted = quote::quote!(#granted).to_string();
                    for ty in &types {
                        let ty = unreferenced(ty);
                        assert_ne!(
                            quote::quote!(#ty).to_string(),
                            granted,
                            "`{}` takes a grant and a separate payload: send `grant.payload()`",
                            signature.ident
                        );
                    }
                }
            }
        }
        assert!(checked > 0, "no function taking a grant found in the docs");
    }

    fn signatures(items: &[syn::Item]) -> Vec<&syn::Signature> {
        let mut found = Vec::new();
        for item in items {
            match item {
                syn::Item::Fn(function) => found.push(&function.sig),
                syn::Item::Impl(block) => {
                    found.extend(block.items.iter().filter_map(|item| match item {
                        syn::ImplItem::Fn(function) => Some(&function.sig),
                        _ => None,
                    }));
                }
                _ => {}
            }
        }
        found
    }

    fn unreferenced(ty: &syn::Type) -> &syn::Type {
        match ty {
            syn::Type::Reference(reference) => unreferenced(&reference.elem),
            ty => ty,
        }
    }

    /// `T` for a parameter of type `Grant<T>`, `&Grant<T>` or `path::Grant<T>`.
    fn grant_of(ty: &syn::Type) -> Option<&syn::Type> {
        let syn::Type::Path(path) = unreferenced(ty) else {
            return None;
        };
        let last = path.path.segments.last()?;
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
            return None;
        };
        match args.args.first()? {
            syn::GenericArgument::Type(inner) if last.ident == "Grant" => Some(inner),
            _ => None,
        }
    }

    /// Each token as text, delimiters included: the comparison ignores layout and spacing.
    fn flatten(tokens: TokenStream) -> Vec<String> {
        let mut flat = Vec::new();
        for tree in tokens {
            match tree {
                TokenTree::Group(group) => {
                    let (open, close) = match group.delimiter() {
                        Delimiter::Parenthesis => ("(", ")"),
                        Delimiter::Brace => ("{", "}"),
                        Delimiter::Bracket => ("[", "]"),
                        Delimiter::None => ("", ""),
                    };
                    flat.push(open.to_owned());
                    flat.extend(flatten(group.stream()));
                    flat.push(close.to_owned());
                }
                TokenTree::Punct(punct) => flat.push(punct.as_char().to_string()),
                other => flat.push(other.to_string()),
            }
        }
        flat
    }
}
