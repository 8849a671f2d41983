"""Build a weekly sign-in report from the audit log."""
import csv
import sys
from collections import Counter


def load_events(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def count_failures(events):
    # TODO: group by IP address as well
    return Counter(e["email"] for e in events if e["outcome"] == "failure")


def main():
    events = load_events(sys.argv[1])
    for email, n in count_failures(events).most_common(10):
        print(f"{email}\t{n}")


if __name__ == "__main__":
    main()
