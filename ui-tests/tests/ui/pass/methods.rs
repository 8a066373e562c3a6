//! Methods: `&self`, `&mut self`, `self`, `self: Box<Self>`, sync and async, in inherent
//! impls, trait impls and trait default methods.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize)]
pub struct Email {
    pub to: String,
}

#[derive(Default)]
pub struct Mailer {
    sent: Vec<String>,
}

impl Mailer {
    #[requires_approval(operation = "smtp.send")]
    pub fn peek(&self, #[payload] email: Email, approval: Claim<'_>) -> Result<usize, Error> {
        approval.assert_active()?;
        Ok(self.sent.len() + email.to.len())
    }

    #[requires_approval(operation = "smtp.send")]
    pub fn send(&mut self, #[payload] email: Email, approval: Claim<'_>) -> Result<(), Error> {
        approval.assert_active()?;
        self.sent.push(email.to.clone());
        Ok(())
    }

    #[requires_approval(operation = "smtp.send")]
    pub fn into_sent(
        self,
        #[payload] email: Email,
        approval: Claim<'_>,
    ) -> Result<Vec<String>, Error> {
        approval.assert_active()?;
        let mut sent = self.sent;
        sent.push(email.to.clone());
        Ok(sent)
    }

    #[requires_approval(operation = "smtp.send")]
    pub fn boxed(
        self: Box<Self>,
        #[payload] email: Email,
        approval: Claim<'_>,
    ) -> Result<usize, Error> {
        approval.assert_active()?;
        Ok(self.sent.len() + email.to.len())
    }

    #[requires_approval(operation = "smtp.send")]
    pub async fn send_async(
        &mut self,
        #[payload] email: Email,
        approval: Claim<'_>,
    ) -> Result<(), Error> {
        approval.assert_active()?;
        self.sent.push(email.to.clone());
        Ok(())
    }

    #[requires_approval(operation = "smtp.send")]
    pub async fn into_sent_async(
        self,
        #[payload] email: Email,
        approval: Claim<'_>,
    ) -> Result<Vec<String>, Error> {
        approval.assert_active()?;
        let mut sent = self.sent;
        sent.push(email.to.clone());
        Ok(sent)
    }
}

#[allow(async_fn_in_trait)] // a test of the macro, not of `Send` bounds
pub trait Outbox {
    fn sent(&self) -> usize;

    /// A default method is a body like any other.
    #[requires_approval(operation = "smtp.send")]
    fn send_default(
        &self,
        #[payload] email: Email,
        approval: Claim<'_>,
    ) -> Result<usize, Error> {
        approval.assert_active()?;
        Ok(self.sent() + email.to.len())
    }

    /// So is an async one.
    #[requires_approval(operation = "smtp.send")]
    async fn send_default_async(
        &self,
        #[payload] email: Email,
        approval: Claim<'_>,
    ) -> Result<usize, Error> {
        approval.assert_active()?;
        Ok(self.sent() + email.to.len())
    }

    fn send_required(&mut self, email: Email, approval: Claim<'_>) -> Result<(), Error>;
}

impl Outbox for Mailer {
    fn sent(&self) -> usize {
        self.sent.len()
    }

    #[requires_approval(operation = "smtp.send")]
    fn send_required(
        &mut self,
        #[payload] email: Email,
        approval: Claim<'_>,
    ) -> Result<(), Error> {
        approval.assert_active()?;
        self.sent.push(email.to.clone());
        Ok(())
    }
}

fn main() {}
