"""PostgreSQL: the embedded server, the connection pool, migrations, and the stores that run ``sql/``."""
