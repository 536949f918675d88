"""SCIM 2.0 provisioning (RFC 7643, 7644): a directory keeps members and teams in step."""
