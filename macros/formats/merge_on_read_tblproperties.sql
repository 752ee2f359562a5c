{% macro merge_on_read_tblproperties() -%}
    {#-
        Table properties that make a MERGE record deleted rows without rewriting data files
        (merge-on-read). For the config of incremental models whose MERGEs touch few rows of large
        files.
    -#}
    {{- return(format_variant('merge_on_read_tblproperties')()) -}}
{%- endmacro %}


{% macro delta__merge_on_read_tblproperties() -%}
    {#- Deletion vectors. -#}
    {{- return({'delta.enableDeletionVectors': 'true'}) -}}
{%- endmacro %}


{% macro iceberg__merge_on_read_tblproperties() -%}
    {#- Format version 2, with position deletes for MERGE, UPDATE and DELETE. -#}
    {{- return({
        'format-version': '2',
        'write.merge.mode': 'merge-on-read',
        'write.update.mode': 'merge-on-read',
        'write.delete.mode': 'merge-on-read',
    }) -}}
{%- endmacro %}
