-- The fleet view of the dashboard (issue 24): each node's web API origin (`https://HOST:PORT`,
-- from webAddress or nodeAddress's host and webListen's port; '' when it has none), so a node's
-- page can list every node and each node answer CORS for exactly the fleet's origins.
ALTER TABLE nodes ADD COLUMN web_origin text NOT NULL DEFAULT '';
