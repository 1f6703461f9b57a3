from django import template

from render.diffrender import rows_html

register = template.Library()
register.simple_tag(rows_html, name="diff_rows")
