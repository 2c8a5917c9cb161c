//! The scheduler decisions' world for the modules that send webhook events: the shared fakes and the
//! tenant's webhook settings.

/// The shared world and the tenant's webhook settings, for the modules that send webhook events; `T`
/// names the module, so that each adds its own helpers to its own world.
pub(crate) struct Hooked<T> {
    pub(crate) base: strato_fakes::World,
    pub(crate) webhooks: strato_fakes::FakeWebhooks,
    module: std::marker::PhantomData<T>,
}

impl<T> std::ops::Deref for Hooked<T> {
    type Target = strato_fakes::World;
    fn deref(&self) -> &strato_fakes::World {
        &self.base
    }
}

/// The shared world whose tenant has one webhook, subscribed to `events` (to every event where `None`).
pub(crate) fn hooked<T>(events: Option<Vec<strato_domain::webhook::EventType>>) -> Hooked<T> {
    let w = Hooked {
        base: strato_fakes::World::default(),
        webhooks: strato_fakes::FakeWebhooks::default(),
        module: std::marker::PhantomData,
    };
    let hook = strato_domain::webhook::Webhook::new("https://hooks.example.com/strato", "0123456789abcdef0");
    w.webhooks.set(&w.tenant, hook.unwrap().with_events(events));
    w
}
