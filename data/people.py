"""Seeded generator of FEBRL-like people records with duplicates and known true clusters.

Each entity gets one original record (``rec-{i}-org``) and, with probability ``dup_share``, one or
more duplicates (``rec-{i}-dup-{j}``, at most ``max_dups``) in which each field is independently
corrupted with probability ``error_rate``: a typo (one character substituted, inserted, deleted or
two neighbours transposed), a missing value, or, for the names, given name and surname swapped.
Columns as FEBRL: ``rec_id, given_name, surname, street_number, address_1, suburb, postcode, state,
date_of_birth, soc_sec_id``, all text (postcodes and dates keep leading zeros), plus ``entity`` (the
true cluster) in the truth returned beside the table. Same seed, same records.

    python data/people.py --entities 1000000 --out /tmp/people_1m.parquet
"""
from __future__ import annotations

import argparse
import random
import string

import pandas as pd

GIVEN = ("james john robert michael william david richard joseph thomas charles christopher daniel matthew "
         "anthony mark donald steven paul andrew joshua kenneth kevin brian george timothy ronald jason edward "
         "jeffrey ryan jacob gary nicholas eric jonathan stephen larry justin scott brandon benjamin samuel "
         "mary patricia jennifer linda elizabeth barbara susan jessica sarah karen lisa nancy betty margaret "
         "sandra ashley kimberly emily donna michelle carol amanda dorothy melissa deborah stephanie rebecca "
         "sharon laura cynthia kathleen amy angela shirley anna brenda pamela emma nicole helen samantha "
         "katherine christine debra rachel carolyn janet catherine maria heather diane ruth julie olivia joyce "
         "virginia victoria kelly lauren christina joan evelyn judith megan andrea cheryl hannah jacqueline "
         "martha gloria teresa ann sara madison frances kathryn janice jean abigail alice judy sophia grace "
         "denise amber doris marilyn danielle beverly isabella theresa diana natalie brittany charlotte marie "
         "kayla alexis lori lachlan deakin joshua jack liam noah oliver harrison lucas mason ethan").split()
SURNAMES = ("smith jones williams brown wilson taylor johnson white martin anderson thompson nguyen thomas "
            "walker harris lee ryan robinson kelly king davis wright evans roberts green hall wood jackson "
            "clarke patel khan lewis james phillips mitchell turner campbell scott edwards baker hill morris "
            "young allen stewart cook murphy cooper ward morgan bell bailey reid watson mills hughes price "
            "murray russell collins hunter simpson ross kennedy graham howard mcdonald sullivan hamilton "
            "berry waller sondergeld reynolds gibson ellis marshall dixon fraser hunt webb black wallace burns "
            "chapman hayes rose grant stone palmer fox warren elliott lane schmidt parsons holmes mason dunn "
            "gordon porter knight chen wang li zhang liu singh kumar sharma ali hussain ahmed rahman").split()
STREETS = ("george king queen victoria william elizabeth church high station park john albert railway main "
           "charles hill bridge mill cross anzac pacific ocean river beach lake forest garden tullaroop giblin "
           "goldfinch banksia wattle acacia eucalypt jacaranda waratah").split()
KINDS = "street road avenue place crescent drive circuit lane close court parade terrace way".split()
SUBURBS = ("richmond hawthorn kew carlton fitzroy brunswick coburg preston northcote bentleigh brighton "
           "sandringham mentone frankston dandenong springvale clayton glen_waverley box_hill doncaster "
           "ringwood croydon lilydale belgrave ferntree_gully rowville bittern canterbury willaroo killarney "
           "toorak malvern caulfield elsternwick st_kilda prahran south_yarra windsor").split()
STATES = ("nsw", "vic", "qld", "wa", "sa", "tas", "act", "nt")
STATE_SHARE = (0.32, 0.26, 0.2, 0.1, 0.07, 0.02, 0.02, 0.01)
COLUMNS = ["rec_id", "given_name", "surname", "street_number", "address_1", "suburb", "postcode", "state",
           "date_of_birth", "soc_sec_id"]


def _typo(rnd: random.Random, s: str) -> str:
    if not s:
        return s
    alphabet = string.digits if s.isdigit() else string.ascii_lowercase
    i = rnd.randrange(len(s))
    kind = rnd.randrange(4)
    if kind == 0:  # substitute
        return s[:i] + rnd.choice([c for c in alphabet if c != s[i]] or alphabet) + s[i + 1:]
    if kind == 1:  # insert
        return s[:i] + rnd.choice(alphabet) + s[i:]
    if kind == 2 and len(s) > 1:  # delete
        return s[:i] + s[i + 1:]
    if len(s) > 1:  # transpose neighbours
        i = min(i, len(s) - 2)
        return s[:i] + s[i + 1] + s[i] + s[i + 2:]
    return s + rnd.choice(alphabet)


def _original(rnd: random.Random) -> dict[str, str | None]:
    year, month, day = rnd.randint(1920, 2010), rnd.randint(1, 12), rnd.randint(1, 28)
    return {"given_name": rnd.choice(GIVEN), "surname": rnd.choice(SURNAMES),
            "street_number": str(rnd.randint(1, 250)),
            "address_1": f"{rnd.choice(STREETS)} {rnd.choice(KINDS)}",
            "suburb": rnd.choice(SUBURBS).replace("_", " "), "postcode": f"{rnd.randint(200, 9999):04d}",
            "state": rnd.choices(STATES, STATE_SHARE)[0], "date_of_birth": f"{year:04d}{month:02d}{day:02d}",
            "soc_sec_id": f"{rnd.randint(0, 9999999):07d}"}


def _duplicate(rnd: random.Random, rec: dict[str, str | None], error_rate: float, missing_rate: float
               ) -> dict[str, str | None]:
    out = dict(rec)
    if rnd.random() < error_rate / 4:
        out["given_name"], out["surname"] = out["surname"], out["given_name"]
    for col in COLUMNS[1:]:
        if out[col] is None:
            continue
        if rnd.random() < missing_rate:
            out[col] = None
        elif rnd.random() < error_rate:
            out[col] = _typo(rnd, out[col])  # type: ignore[arg-type]
    return out


def generate_people(entities: int = 1000, *, dup_share: float = 0.5, max_dups: int = 3, error_rate: float = 0.2,
                    missing_rate: float = 0.05, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(records, truth)``: the people table (all text) and ``(rec_id, entity)``, the true clusters."""
    rnd = random.Random(seed)
    rows: list[dict[str, str | None]] = []
    truth: list[tuple[str, int]] = []
    for i in range(entities):
        org = _original(rnd)
        rows.append({"rec_id": f"rec-{i}-org", **org})
        truth.append((f"rec-{i}-org", i))
        if rnd.random() < dup_share:
            for j in range(rnd.randint(1, max_dups)):
                rows.append({"rec_id": f"rec-{i}-dup-{j}", **_duplicate(rnd, org, error_rate, missing_rate)})
                truth.append((f"rec-{i}-dup-{j}", i))
    order = list(range(len(rows)))
    rnd.shuffle(order)
    records = pd.DataFrame([rows[k] for k in order], columns=COLUMNS)
    return records, pd.DataFrame([truth[k] for k in order], columns=["rec_id", "entity"])


def true_pairs(truth: pd.DataFrame) -> set[tuple[str, str]]:
    """Every unordered pair (smaller key first) of records of the same entity."""
    out: set[tuple[str, str]] = set()
    for _, group in truth.groupby("entity"):
        keys = sorted(group["rec_id"])
        out.update((a, b) for n, a in enumerate(keys) for b in keys[n + 1:])
    return out


def main() -> None:  # pragma: no cover - command line
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--entities", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True, help="a .parquet or .csv file; the truth goes beside it")
    a = p.parse_args()
    records, truth = generate_people(a.entities, seed=a.seed)
    stem = a.out.rsplit(".", 1)[0]
    if a.out.endswith(".csv"):
        records.to_csv(a.out, index=False)
        truth.to_csv(stem + "_truth.csv", index=False)
    else:
        records.to_parquet(a.out, index=False)
        truth.to_parquet(stem + "_truth.parquet", index=False)
    print(f"{len(records)} records of {a.entities} entities -> {a.out}")


if __name__ == "__main__":  # pragma: no cover
    main()
