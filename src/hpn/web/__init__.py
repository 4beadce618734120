"""The browser dashboard (FastAPI): runs, run pages, comparisons, a fabric explorer, new runs.

``create_app(root)`` builds the app; ``hpn dash`` serves it on 127.0.0.1.
"""


def create_app(*args, **kwargs):
    from hpn.web.app import create_app as make

    return make(*args, **kwargs)
