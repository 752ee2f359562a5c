{% macro checkpoint_watermark_query(checkpoint, classified, audited_events) -%}
    {#-
        A one-row query whose column `value` is the checkpoint's (int_merchant_daily_balances) max
        source_watermark wherever it can exceed the audit's events watermark `audited_events` (-1
        without an audit), so that max(value, audited_events) is the last event the checkpoint folded
        (balance_watermarks); null when no row exceeds it on Delta; 'no bounds' as column_max_query.
        `classified` is int_payment_events_classified's relation, or none when it does not exist.
        - delta: max(source_watermark) over the days of the accepted events past `audited_events`
          only. A checkpoint row is one merchant, currency and day, and its source_watermark the
          greatest ingest_seq among that day's events: a row above `audited_events` is on the day
          of an event past it. The days are a broadcast join, so that dynamic partition pruning
          reads them only; a bare max() would scan the whole column (the MERGEs' deletion vectors
          keep Delta from answering it from its log: 15 s warm at 30M events). Without
          `classified`, the bare max().
        - iceberg: column_max_query (the data files' upper bounds, no scan).
    -#}
    {{- return(format_variant('checkpoint_watermark_query')(checkpoint, classified, audited_events)) -}}
{%- endmacro %}


{% macro delta__checkpoint_watermark_query(checkpoint, classified, audited_events) -%}
    {%- if classified is none -%}
        {{ column_max_query(checkpoint, 'source_watermark') }}
    {%- else -%}
        select /*+ BROADCAST(unaudited_days) */ max(checkpoint_days.source_watermark) as value
        from {{ checkpoint }} as checkpoint_days
        inner join (
            select distinct event_date as unaudited_date
            from {{ classified }}
            where is_accepted and ingest_seq > {{ audited_events | int }}
        ) as unaudited_days
            on checkpoint_days.balance_date = unaudited_days.unaudited_date
    {%- endif -%}
{%- endmacro %}


{% macro iceberg__checkpoint_watermark_query(checkpoint, classified, audited_events) -%}
    {{ column_max_query(checkpoint, 'source_watermark') }}
{%- endmacro %}
