{#-
    Conservation by count and by amount: accepted + rejected = ingested. Compares the landing table
    with the classification and with the rejects model; returns a row per measure that differs.
-#}

with ingested as (
    select count(*) as row_count, sum(coalesce(amount, 0)) as amount_total
    from {{ ref('stg_payledger__payment_events') }}
),

classified as (
    select
        count(*) as row_count,
        sum(coalesce(amount, 0)) as amount_total,
        sum(case when is_accepted then 0 else 1 end) as rejected_count
    from {{ ref('int_payment_events_classified') }}
),

rejects as (
    select count(*) as row_count
    from {{ ref('payment_event_rejects') }}
),

checks as (
    select 'classified rows = ingested rows' as measure, ingested.row_count as ingested_value, classified.row_count as classified_value
    from ingested cross join classified
    union all
    select 'classified amount = ingested amount', ingested.amount_total, classified.amount_total
    from ingested cross join classified
    union all
    select 'rejects rows = rejected classified rows', classified.rejected_count, rejects.row_count
    from classified cross join rejects
)

select * from checks
where not (ingested_value <=> classified_value)
