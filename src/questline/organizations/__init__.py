"""Organizations: the tenants. A row is created the first time a valid token names one."""
