"""Offline review: what a stack change will do, without a cluster or credentials.

:mod:`.preview` runs the real program under the Pulumi mock runtime; :mod:`.snapshot` reads a
preview back; :mod:`.properties`, :mod:`.replacement` and :mod:`.compare` judge each resource
as pulumi-kubernetes would; :mod:`.refs` previews a git ref with its own code; :mod:`.report`
writes the pull-request comment.
"""
