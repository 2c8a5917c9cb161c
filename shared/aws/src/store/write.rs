//! Conditional writes. Every conditional put, update, delete and transaction of the store (and of the
//! Terraform state-lock adapter) is sent through [`conditional`], the one place that tells a lost condition
//! (someone else wrote first: an ordinary outcome the caller decides about) from a failed call
//! (`Error::aws`).

use std::future::Future;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::TransactWriteItem;
use aws_sdk_dynamodb::types::builders::{DeleteBuilder, PutBuilder, UpdateBuilder};

use super::{Item, Store};
use crate::error::Error;

/// A conditional write whose condition did not hold; nothing was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lost {
    /// Which item of a transaction failed its condition (0 for a single-item write).
    pub index: usize,
    /// The item as it was, when the request asked for it (`ReturnValuesOnConditionCheckFailure::AllOld`).
    pub old: Option<Item>,
}

impl Lost {
    /// The lost write as an error, for callers that leave the retry to their caller.
    pub(crate) fn conflict(self, message: String) -> Error {
        Error::Conflict(message)
    }
}

/// Service errors that can report a failed condition.
pub(crate) trait ConditionalError {
    fn lost(&self) -> Option<Lost>;
}

impl ConditionalError for PutItemError {
    fn lost(&self) -> Option<Lost> {
        match self {
            Self::ConditionalCheckFailedException(c) => Some(lost_single(c.item.clone())),
            _ => None,
        }
    }
}

impl ConditionalError for UpdateItemError {
    fn lost(&self) -> Option<Lost> {
        match self {
            Self::ConditionalCheckFailedException(c) => Some(lost_single(c.item.clone())),
            _ => None,
        }
    }
}

impl ConditionalError for DeleteItemError {
    fn lost(&self) -> Option<Lost> {
        match self {
            Self::ConditionalCheckFailedException(c) => Some(lost_single(c.item.clone())),
            _ => None,
        }
    }
}

impl ConditionalError for TransactWriteItemsError {
    /// A cancelled transaction lost its condition only if some item says so; a cancellation for any other
    /// reason (throttling, a conflicting transaction) is a failed call.
    fn lost(&self) -> Option<Lost> {
        let Self::TransactionCanceledException(t) = self else {
            return None;
        };
        let reasons = t.cancellation_reasons();
        let index = reasons
            .iter()
            .position(|r| r.code() == Some("ConditionalCheckFailed"))?;
        Some(Lost {
            index,
            old: reasons[index].item.clone(),
        })
    }
}

fn lost_single(old: Option<Item>) -> Lost {
    Lost { index: 0, old }
}

/// Awaits a conditional DynamoDB call named `operation`: `Ok(Ok(output))` when written, `Ok(Err(lost))`
/// when its condition did not hold, `Err(Error::Aws)` for any other failure.
pub(crate) async fn conditional<O, E, R>(
    operation: &'static str,
    call: impl Future<Output = Result<O, SdkError<E, R>>>,
) -> Result<Result<O, Lost>, Error>
where
    E: ConditionalError + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match call.await {
        Ok(out) => Ok(Ok(out)),
        Err(e) => match e.as_service_error().and_then(ConditionalError::lost) {
            Some(lost) => Ok(Err(lost)),
            None => Err(Error::aws(operation, e)),
        },
    }
}

/// A put for a transaction.
pub(crate) fn tx_put(p: PutBuilder) -> Result<TransactWriteItem, Error> {
    let p = p.build().map_err(|e| Error::aws("TransactWriteItems", e))?;
    Ok(TransactWriteItem::builder().put(p).build())
}

/// An update for a transaction.
pub(crate) fn tx_update(u: UpdateBuilder) -> Result<TransactWriteItem, Error> {
    let u = u.build().map_err(|e| Error::aws("TransactWriteItems", e))?;
    Ok(TransactWriteItem::builder().update(u).build())
}

/// A delete for a transaction.
pub(crate) fn tx_delete(d: DeleteBuilder) -> Result<TransactWriteItem, Error> {
    let d = d.build().map_err(|e| Error::aws("TransactWriteItems", e))?;
    Ok(TransactWriteItem::builder().delete(d).build())
}

impl Store {
    /// Writes `items` all or nothing; `Ok(Err(lost))` says which item's condition failed.
    pub(super) async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<Result<(), Lost>, Error> {
        // One conditional put needs no transaction: a PutItem is as atomic, costs half the write capacity,
        // and is the common case (an operation saved without touching the tenant's counters).
        if let [only] = items.as_slice()
            && let Some(p) = only.put()
        {
            let put = self
                .ddb
                .put_item()
                .table_name(p.table_name())
                .set_item(Some(p.item().clone()))
                .set_condition_expression(p.condition_expression().map(str::to_owned))
                .set_expression_attribute_names(p.expression_attribute_names().cloned())
                .set_expression_attribute_values(p.expression_attribute_values().cloned());
            return Ok(conditional("PutItem", put.send()).await?.map(drop));
        }
        let call = self
            .ddb
            .transact_write_items()
            .set_transact_items(Some(items))
            .send();
        Ok(conditional("TransactWriteItems", call).await?.map(drop))
    }
}
