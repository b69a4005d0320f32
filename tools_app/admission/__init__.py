"""Admission: how many of an agent's calls run at once, and which waiting call goes next.

Pure: the services hand it what the database says and write what it answers.
"""
