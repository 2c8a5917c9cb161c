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

/// The single-item writes fail their condition the same way, each in its own error type.
macro_rules! single_item_write {
    ($($error:ty),*) => {$(
        impl ConditionalError for $error {
            fn lost(&self) -> Option<Lost> {
                match self {
                    Self::ConditionalCheckFailedException(c) => Some(Lost {
                        index: 0,
                        old: c.item.clone(),
                    }),
                    _ => None,
                }
            }
        }
    )*};
}

single_item_write!(PutItemError, UpdateItemError, DeleteItemError);

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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use aws_sdk_dynamodb::types::error::{ConditionalCheckFailedException, TransactionCanceledException};
    use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason};
    use aws_smithy_runtime_api::http::{Response, StatusCode};
    use aws_smithy_types::body::SdkBody;

    use super::*;

    type Sdk<E> = SdkError<E, Response<SdkBody>>;

    fn service<E>(e: E) -> Sdk<E> {
        let raw = Response::new(StatusCode::try_from(400).unwrap(), SdkBody::empty());
        SdkError::service_error(e, raw)
    }

    async fn outcome<E>(e: E) -> Result<Result<(), Lost>, Error>
    where
        E: ConditionalError + std::error::Error + Send + Sync + 'static,
    {
        conditional("Op", async { Err::<(), _>(service(e)) }).await
    }

    fn reason(code: &str) -> CancellationReason {
        CancellationReason::builder().code(code).build()
    }

    fn cancelled(reasons: Vec<CancellationReason>) -> TransactWriteItemsError {
        TransactWriteItemsError::TransactionCanceledException(
            TransactionCanceledException::builder()
                .set_cancellation_reasons(Some(reasons))
                .build(),
        )
    }

    #[tokio::test]
    async fn a_lost_condition_is_an_outcome_and_keeps_the_old_item() {
        let old: Item = HashMap::from([("owner".to_owned(), AttributeValue::S("op-1".into()))]);
        let e = UpdateItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder()
                .set_item(Some(old.clone()))
                .build(),
        );
        assert_eq!(
            outcome(e).await.unwrap(),
            Err(Lost {
                index: 0,
                old: Some(old)
            })
        );
        let ok = conditional("PutItem", async { Ok::<_, Sdk<PutItemError>>(7) }).await;
        assert_eq!(ok.unwrap(), Ok(7));
    }

    #[tokio::test]
    async fn a_transaction_names_the_item_whose_condition_failed() {
        let e = cancelled(vec![
            reason("None"),
            reason("ConditionalCheckFailed"),
            reason("None"),
        ]);
        assert_eq!(outcome(e).await.unwrap().unwrap_err().index, 1);
    }

    #[tokio::test]
    async fn other_failures_are_aws_errors_named_by_the_call() {
        // Cancelled for another reason than a condition: the caller cannot settle it by re-reading.
        let e = cancelled(vec![reason("None"), reason("TransactionConflict")]);
        let err = outcome(e).await.unwrap_err();
        assert!(matches!(err, Error::Aws { operation: "Op", .. }), "{err}");
        let e = DeleteItemError::unhandled(std::io::Error::other("throttled"));
        assert!(matches!(outcome(e).await, Err(Error::Aws { .. })));
    }
}
