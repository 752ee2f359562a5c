{% macro money_type() -%}
    {#-
        The type of every stored amount and balance (major units): decimal(18, 4). Scale 4 holds
        the largest ISO 4217 minor unit (CLF, UYW) exactly; precision 18 is the largest that Spark
        and Parquet keep as a 64-bit integer, and leaves 14 integer digits (balances below
        10^14 major units). The same type as `payledger.contract.AMOUNT_TYPE` (a unit test
        compares them).
    -#}
    decimal(18, 4)
{%- endmacro %}
