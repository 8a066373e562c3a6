//! The rules a guarded function must follow, each refusal spanned on the tokens at fault.
//!
//! Every rule is checked and every failure reported at once, so one build shows the whole
//! list. What cannot be seen in the tokens (the payload type's serde impls, the error
//! type's `From<approval_gate::Error>`) is left to the compiler; `expand` points those
//! errors at the payload type and the return type.

use proc_macro2::Span;
use syn::{
    Attribute, Block, FnArg, Ident, LitStr, Meta, Pat, PatIdent, PatType, Path, ReturnType,
    Signature, Type, parse_quote,
};

use crate::args::Args;
use crate::item::{Body, GuardedFn};

/// Longest accepted operation name, in bytes: `approval_gate::limits::MAX_OPERATION_BYTES`.
const MAX_OPERATION_BYTES: usize = 128;

/// A function that follows every rule, with the pieces the expansion needs.
pub(crate) struct Guarded<'a> {
    pub(crate) item: &'a GuardedFn,
    /// The path of the `approval_gate` crate (`::approval_gate` unless `crate = ...`).
    pub(crate) krate: Path,
    pub(crate) operation: LitStr,
    /// The parameter marked `#[payload]`.
    pub(crate) payload: &'a PatType,
    pub(crate) payload_name: &'a Ident,
    /// The name of the `Claim` parameter.
    pub(crate) approval_name: &'a Ident,
    /// `T` in `-> T`: a `Result`.
    pub(crate) output: &'a Type,
    pub(crate) inner_attrs: &'a [Attribute],
    pub(crate) block: &'a Block,
}

/// Checks the arguments and the function against every rule.
pub(crate) fn validate(args: syn::Result<Args>, item: &GuardedFn) -> syn::Result<Guarded<'_>> {
    let mut errors = Errors::default();
    let args = errors.keep(args);
    // A parse error already stopped the argument list; "missing operation" would be noise.
    let operation = args
        .as_ref()
        .and_then(|args| errors.keep(operation(args.operation.as_ref())));
    qualifiers(&item.sig, &mut errors);
    let payload = errors.keep(payload(item));
    let approval_name = errors.keep(approval(item));
    let output = errors.keep(output(&item.sig));
    let body = errors.keep(body(&item.body));
    if let Some(error) = errors.0 {
        return Err(error);
    }
    match (args, operation, payload, approval_name, output, body) {
        (
            Some(args),
            Some(operation),
            Some((payload, payload_name)),
            Some(approval_name),
            Some(output),
            Some((inner_attrs, block)),
        ) => Ok(Guarded {
            item,
            krate: args.krate.unwrap_or_else(|| parse_quote!(::approval_gate)),
            operation,
            payload,
            payload_name,
            approval_name,
            output,
            inner_attrs,
            block,
        }),
        // Unreachable: every rule that yields nothing records an error. Fail closed anyway.
        _ => Err(syn::Error::new(
            Span::call_site(),
            "internal error in `#[requires_approval]`: a rule failed without a message",
        )),
    }
}

/// Every error found, combined into one so that all of them are reported.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    fn keep<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|error| self.push(error)).ok()
    }
}

/// `operation` is present and follows the library's grammar
/// (`approval_gate::check_operation_name`: lowercase `a-z0-9_` segments joined by dots), so a
/// name the gate would refuse fails the build instead of every execution. This crate cannot
/// depend on the library; its tests check both give the same verdict on every name tried.
fn operation(operation: Option<&LitStr>) -> syn::Result<LitStr> {
    let Some(lit) = operation else {
        return Err(syn::Error::new(
            Span::call_site(),
            "missing `operation` argument: name the operation the approval is bound to, \
             e.g. `#[requires_approval(operation = \"smtp.send\")]`",
        ));
    };
    let value = lit.value();
    let problem = if value.is_empty() {
        "`operation` must not be empty: name the operation the approval is bound to, \
         e.g. `operation = \"smtp.send\"`"
            .to_owned()
    } else if value.len() > MAX_OPERATION_BYTES {
        format!(
            "`operation` is {} bytes long; the limit is {MAX_OPERATION_BYTES}",
            value.len()
        )
    } else if let Some(bad) = value.chars().find(|&c| !is_operation_char(c)) {
        format!(
            "`operation` is lowercase ASCII letters, digits and `_` in segments joined by \
             dots (e.g. `smtp.send`), one spelling per name; found {bad:?}"
        )
    } else if value.split('.').any(str::is_empty) {
        "`operation` has an empty segment: segments of `a-z0-9_` joined by single dots \
         (e.g. `smtp.send`)"
            .to_owned()
    } else {
        return Ok(lit.clone());
    };
    Err(syn::Error::new(lit.span(), problem))
}

fn is_operation_char(c: char) -> bool {
    matches!(c, 'a'..='z' | '0'..='9' | '_' | '.')
}

/// No qualifier that changes how the body may run: it is moved into a closure that runs
/// only after the approval is consumed.
fn qualifiers(sig: &Signature, errors: &mut Errors) {
    if let Some(constness) = &sig.constness {
        errors.push(syn::Error::new_spanned(
            constness,
            "`#[requires_approval]` cannot guard a `const fn`: an approval is consumed at run \
             time; remove `const`",
        ));
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.push(syn::Error::new_spanned(
            unsafety,
            "`#[requires_approval]` cannot guard an `unsafe fn`: keep the guarded function \
             safe and call the unsafe code from its body",
        ));
    }
    if let Some(abi) = &sig.abi {
        errors.push(syn::Error::new_spanned(
            abi,
            "`#[requires_approval]` cannot guard an `extern` function: its body runs inside a \
             Rust closure; guard a Rust function and call it from the `extern` one",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(syn::Error::new_spanned(
            variadic,
            "`#[requires_approval]` cannot guard a variadic function: the approval is bound to \
             one `#[payload]` value; pass the arguments in it",
        ));
    }
}

/// Exactly one parameter is marked `#[payload]`, and it is a plain name.
fn payload(item: &GuardedFn) -> syn::Result<(&PatType, &Ident)> {
    let mut marks = item.payload_marks.iter();
    let Some(first) = marks.next() else {
        return Err(syn::Error::new(
            item.sig.paren_token.span.join(),
            "missing `#[payload]` parameter: mark the parameter that holds the value the \
             approval is bound to, e.g. `#[payload] email: Email`",
        ));
    };
    let mut errors = Errors::default();
    for mark in &item.payload_marks {
        if !matches!(mark.attr.meta, Meta::Path(_)) {
            errors.push(syn::Error::new_spanned(
                &mark.attr,
                "`#[payload]` takes no arguments: write `#[payload]`",
            ));
        }
    }
    for extra in marks {
        errors.push(syn::Error::new_spanned(
            &extra.attr,
            "only one parameter can be `#[payload]`: an approval is bound to one value; put \
             the values in one struct",
        ));
    }
    let param = match &item.sig.inputs[first.index] {
        FnArg::Receiver(receiver) => Err(syn::Error::new_spanned(
            receiver,
            "`self` cannot be the `#[payload]`: mark the parameter that holds the value the \
             approval is bound to",
        )),
        FnArg::Typed(typed) => plain_name(
            &typed.pat,
            "the `#[payload]` parameter must be a plain name such as `email`: the body sees \
             the approved value under that name, as `&T`",
            "the `#[payload]` parameter cannot be `mut`: the body sees the approved value, \
             frozen, as `&T`; clone it if you need a changed copy",
        )
        .map(|name| (typed, name)),
    };
    match (errors.0, param) {
        (Some(mut errors), Err(error)) => {
            errors.combine(error);
            Err(errors)
        }
        (Some(errors), Ok(_)) => Err(errors),
        (None, param) => param,
    }
}

/// Exactly one other parameter has type `Claim<'_>`, by value, under a plain name.
fn approval(item: &GuardedFn) -> syn::Result<&Ident> {
    let marked: Vec<usize> = item.payload_marks.iter().map(|mark| mark.index).collect();
    let mut found: Option<&PatType> = None;
    let mut errors = Errors::default();
    for (index, input) in item.sig.inputs.iter().enumerate() {
        let FnArg::Typed(typed) = input else { continue };
        if marked.contains(&index) {
            continue;
        }
        if let Type::Reference(reference) = peel(&typed.ty)
            && is_claim(&reference.elem)
        {
            errors.push(syn::Error::new_spanned(
                &typed.ty,
                "take the `Claim` by value, e.g. `approval: Claim<'_>`: the guarded \
                 function uses it up",
            ));
        } else if is_claim(&typed.ty) {
            if found.is_some() {
                errors.push(syn::Error::new_spanned(
                    &typed.ty,
                    "only one parameter can be a `Claim`: a guarded function consumes one \
                     approval",
                ));
            } else {
                found = Some(typed);
            }
        }
    }
    if let Some(error) = errors.0 {
        return Err(error);
    }
    let Some(typed) = found else {
        return Err(syn::Error::new(
            item.sig.paren_token.span.join(),
            "missing `Claim` parameter: add `approval: approval_gate::Claim<'_>`, through \
             which the caller names the gate, the request and the approved action",
        ));
    };
    plain_name(
        &typed.pat,
        "the `Claim` parameter must be a plain name such as `approval`: the body sees the \
         grant of the consumed approval under that name, as `&Grant<T>`",
        "the `Claim` parameter cannot be `mut`: the body sees the grant of the consumed \
         approval under that name, as `&Grant<T>`",
    )
}

/// The name bound by a parameter pattern that is a bare identifier.
fn plain_name<'a>(pat: &'a Pat, not_a_name: &str, mutable: &str) -> syn::Result<&'a Ident> {
    match pat {
        Pat::Ident(PatIdent {
            by_ref: None,
            mutability: None,
            subpat: None,
            ident,
            ..
        }) => Ok(ident),
        Pat::Ident(PatIdent {
            by_ref: None,
            mutability: Some(mutability),
            subpat: None,
            ..
        }) => Err(syn::Error::new_spanned(mutability, mutable)),
        other => Err(syn::Error::new_spanned(other, not_a_name)),
    }
}

/// The return type is spelled as a `Result`; whether its error type can hold the gate's
/// refusal is for the compiler to check.
fn output(sig: &Signature) -> syn::Result<&Type> {
    const RULE: &str = "a function under `#[requires_approval]` must return `Result<_, E>` \
                        with `E: From<approval_gate::Error> + Display`, so that a refused \
                        approval is returned as an error";
    match &sig.output {
        ReturnType::Type(_, ty) if last_segment_is(ty, "Result") => Ok(ty),
        ReturnType::Type(_, ty) => Err(syn::Error::new_spanned(
            ty,
            format!("{RULE}; this type is not a `Result`"),
        )),
        ReturnType::Default => Err(syn::Error::new(
            sig.paren_token.span.close(),
            format!("{RULE}; add a return type"),
        )),
    }
}

/// There is a body to guard.
fn body(body: &Body) -> syn::Result<(&[Attribute], &Block)> {
    match body {
        Body::Block { inner_attrs, block } => Ok((inner_attrs, block)),
        Body::Missing(semi) => Err(syn::Error::new_spanned(
            semi,
            "`#[requires_approval]` needs a body to guard: put it on the method's \
             implementation, not on its declaration in the trait",
        )),
    }
}

/// Whether `ty` names the caller's claim, `Claim<'_>`.
fn is_claim(ty: &Type) -> bool {
    last_segment_is(ty, "Claim")
}

/// Whether `ty` is a path such as `Claim<'_>` or `std::result::Result<T, E>` whose last
/// segment is `name`. Type aliases are matched by that name only: the compiler checks the rest.
fn last_segment_is(ty: &Type, name: &str) -> bool {
    match peel(ty) {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == name),
        _ => false,
    }
}

/// `ty` without invisible groups (from `macro_rules!` fragments) and parentheses.
fn peel(ty: &Type) -> &Type {
    match ty {
        Type::Group(group) => peel(&group.elem),
        Type::Paren(paren) => peel(&paren.elem),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<String, String> {
        let lit = LitStr::new(text, Span::call_site());
        operation(Some(&lit))
            .map(|lit| lit.value())
            .map_err(|error| error.to_string())
    }

    #[test]
    fn operation_follows_the_library_rule() {
        for good in ["smtp.send", "a", "pay.eur.sepa_v2_1", &"x".repeat(128)] {
            assert_eq!(check(good).as_deref(), Ok(good));
        }
        for bad in [
            "",
            "smtp send",
            "smtp.send\u{202e}",
            "é",
            "Smtp.send",
            "smtp-send",
            "deploy:prod/v2",
            "smtp..send",
            ".smtp",
            "smtp.",
            &"x".repeat(129),
        ] {
            assert!(check(bad).is_err(), "{bad:?} must be refused");
        }
        assert!(operation(None).is_err());
    }

    /// The macro's rule and the library's are one grammar: the same verdict on every name of
    /// up to three characters over an alphabet with every kind of character, and on lengths
    /// around the limit.
    #[test]
    fn the_macro_and_the_library_agree_on_every_name() {
        let alphabet = [
            'a', 'z', '0', '9', '_', '.', 'A', '-', ':', '/', ' ', 'é', '*',
        ];
        let mut names = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> = names
                .iter()
                .flat_map(|name| alphabet.iter().map(move |c| format!("{name}{c}")))
                .collect();
            names.extend(longer);
        }
        for n in [127, 128, 129] {
            names.push("a".repeat(n));
            names.push(format!("{}.b", "a".repeat(n - 2)));
        }
        for name in names {
            assert_eq!(
                check(&name).is_ok(),
                approval_gate::check_operation_name(&name).is_ok(),
                "{name:?}"
            );
        }
    }
}
