"""Single sign-on with an organization's own OpenID Connect provider (docs/identity.md)."""
