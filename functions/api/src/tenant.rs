//! The calling tenant's own settings: the webhook lifecycle events go to (`/v1/webhook`).

use strato_domain::webhook::{self, ALLOWED, EventType, MIN_SECRET_LEN, SECRET_RULE, Webhook, WebhookError};

use crate::requests::{Field, WebhookBody, unknown};
use crate::views::Deleted;
use crate::{caller::Caller, context::Ctx, edge::Reply, error::ApiError};

/// Your webhook: the url as scheme and host only, the secret masked.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = Webhook)]
pub(crate) struct WebhookView {
    pub url: String,
    /// Always `(sensitive)`.
    pub secret: &'static str,
    /// The event types sent; null: all of them.
    pub events: Option<Vec<String>>,
}

const SET_IT: &str = "PUT /v1/webhook with {\"url\": \"https://…\", \"secret\": \"…\"} sets one";

/// The secret is never shown again, and the url only as scheme and host (a path or query can carry a token).
fn view(w: &Webhook) -> WebhookView {
    WebhookView {
        url: w.display_url(),
        secret: crate::views::MASK,
        events: w
            .events()
            .map(|e| e.iter().map(|t| t.as_str().to_owned()).collect()),
    }
}

pub(crate) async fn get_webhook(ctx: &Ctx, caller: &Caller) -> Result<Reply<WebhookView>, ApiError> {
    match ctx.store.tenant_webhook(&caller.tenant).await? {
        Some(w) => Ok(Reply::ok(view(&w))),
        None => Err(ApiError::NotFound(format!("you have no webhook; {SET_IT}"))),
    }
}

pub(crate) async fn put_webhook(
    ctx: &Ctx,
    caller: &Caller,
    body: WebhookBody,
) -> Result<Reply<WebhookView>, ApiError> {
    let mut errors = Vec::new();
    unknown(
        &body.other,
        "",
        "is not a field of this request",
        "url, secret, events",
        &mut errors,
    );
    let names = EventType::names().join(", ");
    let events = match body.events {
        Field::Missing | Field::Null => None,
        Field::Ok(list) => {
            let mut types = Vec::new();
            for (i, name) in list.iter().enumerate() {
                match EventType::parse(name) {
                    Ok(t) => types.push(t),
                    Err(e) => errors.push(ApiError::field(&format!("events[{i}]"), e.to_string(), &names)),
                }
            }
            types.sort();
            types.dedup();
            Some(types)
        }
        Field::Bad(_) => {
            errors.push(ApiError::field("events", "must be a list of event types", &names));
            None
        }
    };
    let url = body.url.required("url", ALLOWED, &mut errors);
    let secret = body.secret.required("secret", SECRET_RULE, &mut errors);
    // The domain's rule: a whsec_ secret by its decoded key's bytes, any other by its characters.
    let secret = secret.filter(|s| match webhook::check_secret(s) {
        Ok(()) => true,
        Err(e) => {
            errors.push(ApiError::field("secret", e.to_string(), SECRET_RULE));
            false
        }
    });
    // The url is checked even when the secret is missing or refused, so every problem shows at once.
    let long_enough = "-".repeat(MIN_SECRET_LEN);
    // Where Strato may call (the SSRF guard): https, and no literal loopback, private or metadata address.
    let allowed = ctx.config.egress.check_url(url.as_deref().unwrap_or_default());
    let hook = url.and_then(|u| {
        match allowed.and_then(|_| Webhook::new(&u, secret.as_deref().unwrap_or(&long_enough))) {
            Ok(w) => Some(w),
            Err(e) => {
                if matches!(e, WebhookError::Url(_) | WebhookError::Forbidden(_)) {
                    errors.push(ApiError::field("url", e.to_string(), ALLOWED));
                }
                None
            }
        }
    });
    match hook.map(|w| w.with_events(events)) {
        Some(w) if errors.is_empty() => {
            ctx.store.set_tenant_webhook(&caller.tenant, Some(&w)).await?;
            Ok(Reply::ok(view(&w)))
        }
        _ => Err(ApiError::invalid(errors)),
    }
}

pub(crate) async fn delete_webhook(ctx: &Ctx, caller: &Caller) -> Result<Reply<Deleted>, ApiError> {
    if ctx.store.tenant_webhook(&caller.tenant).await?.is_none() {
        return Err(ApiError::NotFound(format!("you have no webhook; {SET_IT}")));
    }
    ctx.store.set_tenant_webhook(&caller.tenant, None).await?;
    Ok(Reply::ok(Deleted { deleted: true }))
}
