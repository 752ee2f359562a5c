with source as (
    select * from {{ source('payledger', 'reserve_policies') }}
),

renamed as (
    select
        segment,
        cast(reserve_pct as decimal(5, 4)) as reserve_pct,
        effective_from as effective_from_date,
        updated_at
    from source
)

select * from renamed
