{% macro log_checkpoint_tblproperties(properties=none) -%}
    {#-
        `properties` (a dict, or none) plus what spreads the calling model's log checkpoints over
        other builds than the other tables', where the format writes them in the committing build.
        For the config of the tables a scheduled build commits to every time. Applied when dbt
        creates the table (a full refresh too).
    -#}
    {{- return(format_variant('log_checkpoint_tblproperties')(properties)) -}}
{%- endmacro %}


{% macro delta__log_checkpoint_tblproperties(properties=none) -%}
    {#- Delta writes a checkpoint of a table's log in the commit whose version is a multiple of
        the table's `delta.checkpointInterval` (OptimisticTransaction.postCommit, delta-io/delta
        v3.3.3; default 10). The tables below commit once a build each, so with one interval they
        checkpoint in the same builds: on the 3M aging warehouse a build from a new process took
        4-5 s more in one build of ten (CHANGELOG.md, 2026-12-06). Distinct intervals from 10 to
        17 (the longer, the more commit files a reader replays after the checkpoint) leave most
        builds with one checkpoint or none. -#}
    {%- set intervals = {
        'int_payment_events_classified': 10,
        'int_merchant_daily_balances': 11,
        'int_payment_event_ids': 12,
        'merchant_balance_current': 13,
        'payment_event_rejects': 14,
        'balance_invalidations': 15,
        'int_balance_slices_invalidated': 17,
    } -%}
    {%- set result = dict(properties or {}) -%}
    {%- if model.name in intervals -%}
        {%- do result.update({'delta.checkpointInterval': intervals[model.name] | string}) -%}
    {%- endif -%}
    {{- return(result or none) -}}
{%- endmacro %}


{% macro iceberg__log_checkpoint_tblproperties(properties=none) -%}
    {#- `properties` unchanged: Iceberg keeps no log to checkpoint (each commit writes a whole
        metadata file). -#}
    {{- return(properties) -}}
{%- endmacro %}
