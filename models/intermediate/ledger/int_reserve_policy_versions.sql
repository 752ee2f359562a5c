with snapshot as (
    select * from {{ ref('snp_payledger__reserve_policies') }}
),

versions as (
    select
        segment,
        reserve_pct,
        effective_from_date,
        dbt_valid_from as observed_at,
        dbt_valid_to as superseded_at
    from snapshot
)

select * from versions
