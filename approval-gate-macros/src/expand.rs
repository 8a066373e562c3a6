//! Code generation: the guarded function, and the fallback emitted when a rule is broken.
//!
//! The signature is re-emitted token for token; only the body changes. It becomes a call to
//! `approval_gate::__private::execute` (or `execute_async`), which binds the caller's
//! approval to the operation and payload, consumes it, and only then runs the original body,
//! moved into a closure. The closure is the only place the body exists.

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::visit_mut::{self, VisitMut};
use syn::{Type, TypeInfer};

use crate::item::{Body, GuardedFn};
use crate::valid::Guarded;

/// The guarded function. For a sync `fn send(&self, #[payload] email: Email, approval:
/// Claim<'_>) -> Result<Id, SendError>` with `operation = "smtp.send"`:
///
/// ```text
/// fn send(&self, email: Email, approval: Claim<'_>) -> Result<Id, SendError> {
///     let __approval_gate_approval = approval;
///     let __approval_gate_payload = email;
///     ::approval_gate::__private::check_payload(&__approval_gate_payload);
///     ::approval_gate::__private::check_output::<Result<Id, SendError>>();
///     ::approval_gate::__private::execute(
///         &__approval_gate_approval,
///         "smtp.send",
///         &__approval_gate_payload,
///         move |__approval_gate_execution: &::approval_gate::__private::Grant<Email>|
///             -> Result<Id, SendError>
///         {
///             let approval: &::approval_gate::__private::Grant<Email> = __approval_gate_execution;
///             let email: &Email = __approval_gate_execution.payload();
///             { /* the original body */ }
///         }
///     )
/// }
/// ```
///
/// The `async` form is in docs/trusted-execution.md, which a test keeps in step with this
/// function.
pub(crate) fn guarded(guarded: &Guarded<'_>) -> TokenStream {
    let GuardedFn {
        attrs, vis, sig, ..
    } = guarded.item;
    let Guarded {
        operation,
        approval_name: approval,
        payload_name: payload,
        inner_attrs,
        block,
        ..
    } = guarded;
    let private = private_path(guarded);

    // Mixed-site names are invisible to the body: the caller's values can be reached only
    // through the bindings below, which shadow the parameters' names.
    let caller_approval = Ident::new("__approval_gate_approval", Span::mixed_site());
    let caller_payload = Ident::new("__approval_gate_payload", Span::mixed_site());
    let execution = Ident::new("__approval_gate_execution", Span::mixed_site());
    let declared = Ident::new("__approval_gate_output", Span::mixed_site());

    // Moving the parameters is the macro's doing, not a use the user wrote: lints such as
    // `clippy::used_underscore_binding` must not see it as one.
    let moved_approval = generated(approval);
    let moved_payload = generated(payload);

    // `impl Trait` cannot be written in a binding or a closure's return type; `_` infers the
    // same type from the call.
    let payload_ty = erase_impl_trait(&guarded.payload.ty);
    let output = erase_impl_trait(guarded.output);

    let checks = checks(guarded, &caller_payload);
    let payload_arg = spanned_on(&guarded.payload.ty, &caller_payload);
    let bindings = quote! {
        let #approval: &#private::Grant<#payload_ty> = #execution;
        let #payload: &#payload_ty = #execution.payload();
    };
    let (function, closure, await_) = if sig.asyncness.is_some() {
        // An `async` block infers its output from its body alone; the never-taken `return`
        // of the declared type makes `?`, `return` and coercions work as in the original.
        let closure = quote! {
            async move |#execution: &#private::Grant<#payload_ty>| {
                if let ::core::option::Option::Some(#declared) =
                    ::core::option::Option::None::<#output>
                {
                    return #declared;
                }
                #bindings
                #block
            }
        };
        (quote!(execute_async), closure, quote!(.await))
    } else {
        let closure = quote! {
            move |#execution: &#private::Grant<#payload_ty>| -> #output {
                #bindings
                #block
            }
        };
        (quote!(execute), closure, TokenStream::new())
    };
    // The call is located on the return type, so that whatever the compiler reports about
    // the error type (`From<approval_gate::Error>`, `Display`) points there, at the same
    // place as the `check_output` error it then de-duplicates against.
    let output_spans = Spans::of(guarded.output);
    let callee = relocate(quote!(#private::#function), &output_spans);
    let mut arguments = Group::new(
        Delimiter::Parenthesis,
        quote!(&#caller_approval, #operation, #payload_arg, #closure),
    );
    arguments.set_span(Span::call_site().located_at(output_spans.last));
    let await_ = relocate(await_, &Spans::at(output_spans.last));
    let body = quote! {
        #(#inner_attrs)*
        let #caller_approval = #moved_approval;
        let #caller_payload = #moved_payload;
        #checks
        #callee #arguments #await_
    };
    // Located where the user's body was, so that the compiler's notes and suggestions about
    // "the function body" show the user's code.
    let mut body = Group::new(Delimiter::Brace, body);
    body.set_span(Span::call_site().located_at(block.brace_token.span.join()));

    quote! {
        #(#attrs)*
        #vis #sig #body
    }
}

/// Compile-time checks of what the tokens cannot show, spanned on the payload type and the
/// return type so that the errors point at them, with the messages of the support traits.
fn checks(guarded: &Guarded<'_>, caller_payload: &Ident) -> TokenStream {
    let private = private_path(guarded);
    let payload = spanned_on(&guarded.payload.ty, caller_payload);
    let payload_check = quote!(#private::check_payload(#payload););
    // A type with `impl Trait` cannot be named here; the call to `execute` checks it instead.
    let output_check = (!has_impl_trait(guarded.output)).then(|| {
        let output = relocate_each(guarded.output.to_token_stream());
        quote!(#private::check_output::<#output>();)
    });
    quote!(#payload_check #output_check)
}

/// The function with its body replaced by `unreachable!()`, after the errors: the rest of
/// the crate still type-checks against the signature, and the unguarded body is never
/// emitted.
pub(crate) fn fallback(item: &GuardedFn, error: &syn::Error) -> TokenStream {
    let GuardedFn {
        attrs,
        vis,
        sig,
        body,
        ..
    } = item;
    let error = error.to_compile_error();
    let mut sig = sig.clone();
    // Rust refuses variadic Rust functions with an error of its own; ours already says why.
    sig.variadic = None;
    let body = match body {
        Body::Block { inner_attrs, .. } => quote!({
            #(#inner_attrs)*
            ::core::unreachable!()
        }),
        Body::Missing(semi) => semi.to_token_stream(),
    };
    quote! {
        #error
        #(#attrs)*
        #[allow(unused_variables, unused_mut)]
        #vis #sig #body
    }
}

/// The item unchanged, after the error: it is not a function, so it has no body to guard.
pub(crate) fn not_a_function(error: &syn::Error, item: TokenStream) -> TokenStream {
    let mut tokens = error.to_compile_error();
    tokens.extend(item);
    tokens
}

/// `::approval_gate::__private`, or `<crate = path>::__private`.
fn private_path(guarded: &Guarded<'_>) -> TokenStream {
    let krate = &guarded.krate;
    quote!(#krate::__private)
}

/// The first and last token of a type: spanning generated tokens from one to the other makes
/// the compiler underline the whole type.
struct Spans {
    first: Span,
    last: Span,
}

impl Spans {
    fn of(tokens: &impl ToTokens) -> Self {
        let mut trees = tokens.to_token_stream().into_iter();
        let first = trees
            .next()
            .map_or_else(Span::call_site, |tree| tree.span());
        let last = trees.last().map_or(first, |tree| tree.span());
        Self { first, last }
    }

    fn at(span: Span) -> Self {
        Self {
            first: span,
            last: span,
        }
    }
}

/// `name` as if written by the macro at the place the user wrote it.
fn generated(name: &Ident) -> Ident {
    let mut name = name.clone();
    name.set_span(Span::call_site().located_at(name.span()));
    name
}

/// `&name`, located on `ty` from its first to its last token: the compiler underlines the
/// whole type for an error about this expression.
fn spanned_on(ty: &Type, name: &Ident) -> TokenStream {
    let spans = Spans::of(ty);
    let amp = quote_spanned!(spans.first=> &);
    let mut name = name.clone();
    name.set_span(name.span().located_at(spans.last));
    quote!(#amp #name)
}

/// `tokens` located from `spans.first` to `spans.last`, as written by the macro.
fn relocate(tokens: TokenStream, spans: &Spans) -> TokenStream {
    let mut trees: Vec<TokenTree> = tokens.into_iter().collect();
    let count = trees.len();
    for (index, tree) in trees.iter_mut().enumerate() {
        let location = if index + 1 == count {
            spans.last
        } else {
            spans.first
        };
        tree.set_span(Span::call_site().located_at(location));
    }
    trees.into_iter().collect()
}

/// `tokens` where they are, as written by the macro. Call-site names resolve as the user's
/// do; the point is the span: the compiler then reports the type at exactly the span of the
/// call `relocate`d onto it, and keeps one of two identical errors.
fn relocate_each(tokens: TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(group) = &tree {
                let mut moved = Group::new(group.delimiter(), relocate_each(group.stream()));
                moved.set_span(Span::call_site().located_at(group.span()));
                tree = TokenTree::Group(moved);
            } else {
                tree.set_span(Span::call_site().located_at(tree.span()));
            }
            tree
        })
        .collect()
}

fn has_impl_trait(ty: &Type) -> bool {
    let mut eraser = Eraser::default();
    eraser.visit_type_mut(&mut ty.clone());
    eraser.erased
}

/// `ty` with every `impl Trait` replaced by `_`.
fn erase_impl_trait(ty: &Type) -> Type {
    let mut ty = ty.clone();
    Eraser::default().visit_type_mut(&mut ty);
    ty
}

#[derive(Default)]
struct Eraser {
    erased: bool,
}

impl VisitMut for Eraser {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Type::ImplTrait(impl_trait) = ty {
            let underscore_token = syn::Token![_](impl_trait.impl_token.span);
            *ty = Type::Infer(TypeInfer { underscore_token });
            self.erased = true;
        } else {
            visit_mut::visit_type_mut(self, ty);
        }
    }
}
