#!/bin/sh
# Run once by the Postgres image at its first start (docker-entrypoint-initdb.d): lets the standby
# of infra/docker-compose.cluster.yml stream from this primary.
echo 'host replication all all trust' >> "$PGDATA/pg_hba.conf"
