"""Signed webhooks (Standard Webhooks): subscriptions, deliveries and the dispatcher."""
