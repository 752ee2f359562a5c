{#-
    Conservation by count and by amount: accepted + rejected = ingested. Compares the landing table
    with the classification and with the rejects model; returns a row per measure that differs.
    Amounts land as sent and the classification stores them as money_type(): the landed side is
    summed after the same cast (a rejected amount with a fifth decimal is rounded, one beyond
    14 integer digits is null; the landing table keeps both as sent).
    Which rows: checked_since. A build that payledger runs compares the rows past the published
    build's events watermark (that build compared the rows before it); otherwise every row. Sums
    of no rows are 0, not null, so that a build with nothing new compares equal counts.
-#}
{%- set since = checked_since() %}
{%- set rows = changed_since_checked(since, ingest_seq='ingest_seq') %}

with ingested as (
    select
        count(*) as event_rows,
        coalesce(sum(cast(amount as {{ money_type() }})), 0) as amount_total
    from {{ ref('stg_payledger__payment_events') }}
    where {{ rows }}
),

classified as (
    select
        count(*) as event_rows,
        coalesce(sum(amount), 0) as amount_total,
        count(case when is_accepted then null else 1 end) as rejected_count
    from {{ ref('int_payment_events_classified') }}
    where {{ rows }}
),

rejects as (
    select count(*) as event_rows
    from {{ ref('payment_event_rejects') }}
    where {{ rows }}
),

checks as (
    select
        'classified rows = ingested rows' as measure,
        ingested.event_rows as ingested_value,
        classified.event_rows as classified_value
    from ingested cross join classified
    union all
    select
        'classified amount = ingested amount' as measure,
        ingested.amount_total as ingested_value,
        classified.amount_total as classified_value
    from ingested cross join classified
    union all
    select
        'rejects rows = rejected classified rows' as measure,
        classified.rejected_count as ingested_value,
        rejects.event_rows as classified_value
    from classified cross join rejects
)

select * from checks
where not (ingested_value <=> classified_value)
