//! The annotated function as written: attributes, visibility, signature and body.
//!
//! Parsing accepts every function shape Rust allows (free functions, methods, trait methods
//! with or without a body), so that `valid` can refuse the unsupported ones with a precise
//! message instead of a parse error. The `#[payload]` markers are taken out of the signature
//! here: the signature is re-emitted as is, and the marker is not an attribute Rust knows.

use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Block, FnArg, Signature, Token, Visibility, braced};

/// A function under `#[requires_approval]`.
pub(crate) struct GuardedFn {
    /// Outer attributes and doc comments, re-emitted unchanged.
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    /// The signature without its `#[payload]` markers.
    pub(crate) sig: Signature,
    pub(crate) body: Body,
    /// Every `#[payload]` marker, with the index of the parameter it was on.
    pub(crate) payload_marks: Vec<PayloadMark>,
}

/// What follows the signature.
pub(crate) enum Body {
    /// `{ ... }`, with its inner attributes (`#![allow(...)]`) kept apart so that they stay
    /// at the top of the function.
    Block {
        inner_attrs: Vec<Attribute>,
        block: Block,
    },
    /// `;`: a trait method declared without a body.
    Missing(Token![;]),
}

/// A `#[payload]` attribute found on a parameter.
pub(crate) struct PayloadMark {
    /// Position in `sig.inputs`.
    pub(crate) index: usize,
    pub(crate) attr: Attribute,
}

impl Parse for GuardedFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        if input.fork().parse::<Signature>().is_err() {
            return Err(input.error(
                "`#[requires_approval]` applies only to functions and methods: put it on the \
                 function whose body must wait for an approval",
            ));
        }
        let mut sig: Signature = input.parse()?;
        let body = if input.peek(Token![;]) {
            Body::Missing(input.parse()?)
        } else {
            let content;
            let brace_token = braced!(content in input);
            let inner_attrs = content.call(Attribute::parse_inner)?;
            let stmts = content.call(Block::parse_within)?;
            Body::Block {
                inner_attrs,
                block: Block { brace_token, stmts },
            }
        };
        let payload_marks = take_payload_marks(&mut sig);
        Ok(Self {
            attrs,
            vis,
            sig,
            body,
            payload_marks,
        })
    }
}

fn take_payload_marks(sig: &mut Signature) -> Vec<PayloadMark> {
    let mut marks = Vec::new();
    for (index, input) in sig.inputs.iter_mut().enumerate() {
        let attrs = match input {
            FnArg::Receiver(receiver) => &mut receiver.attrs,
            FnArg::Typed(typed) => &mut typed.attrs,
        };
        let (payload, others): (Vec<_>, Vec<_>) = attrs
            .drain(..)
            .partition(|attr| attr.path().is_ident("payload"));
        *attrs = others;
        marks.extend(payload.into_iter().map(|attr| PayloadMark { index, attr }));
    }
    marks
}
