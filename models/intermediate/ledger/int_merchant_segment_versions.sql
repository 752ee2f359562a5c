with snapshot as (
    select * from {{ ref('snp_payledger__merchants') }}
),

versions as (
    select
        merchant_id,
        segment,
        segment_effective_from_date,
        dbt_valid_from as observed_at,
        dbt_valid_to as superseded_at
    from snapshot
)

select * from versions
