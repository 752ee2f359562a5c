{#-
    Conservation by count and by amount: accepted + rejected = ingested. Compares the landing table
    with the classification and with the rejects model; returns a row per measure that differs.
    Amounts land as sent and the classification stores them as money_type(): the landed side is
    summed after the same cast (a rejected amount with a fifth decimal is rounded, one beyond
    14 integer digits is null; the landing table keeps both as sent).
-#}

with ingested as (
    select
        count(*) as event_rows,
        sum(coalesce(cast(amount as {{ money_type() }}), 0)) as amount_total
    from {{ ref('stg_payledger__payment_events') }}
),

classified as (
    select
        count(*) as event_rows,
        sum(coalesce(amount, 0)) as amount_total,
        sum(case when is_accepted then 0 else 1 end) as rejected_count
    from {{ ref('int_payment_events_classified') }}
),

rejects as (
    select count(*) as event_rows
    from {{ ref('payment_event_rejects') }}
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
