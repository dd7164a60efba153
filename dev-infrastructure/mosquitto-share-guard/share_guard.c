/*
 * share_guard: a mosquitto 2.0 plugin (plugin interface version 5) that lets only named
 * clients make MQTT shared subscriptions ($share/<group>/<filter>).
 *
 * Why: mosquitto grants a shared subscription to any client and checks its acl_file only when
 * it delivers a message. A client that joins a share group is handed its share of the group's
 * messages; if the ACL forbids it to read them they are dropped, so the group's real members
 * never see them. The Maestro server instances take the agents' status events through a share
 * group, and an agent could join it and make them miss other management clusters' status
 * (docs/security.md). With this plugin the broker refuses the SUBSCRIBE instead (MQTT v5 reason
 * code 0x87, not authorized) unless the client's username (the certificate CN under
 * use_identity_as_username) is listed:
 *
 *   plugin /path/to/share_guard.so
 *   plugin_opt_shared_subscribers maestro-server,maestro-server-2
 *
 * With plugin_opt_subscribe_filters it also refuses every SUBSCRIBE whose filter is not, exactly,
 * one of the listed filters, where %u stands for the client's username (a username that is not
 * one topic level, holding +, # or /, or empty, matches no filter with %u):
 *
 *   plugin_opt_subscribe_filters sources/maestro/consumers/%u/sourceevents,sources/maestro/consumers/+/agentevents
 *
 * mosquitto grants a client any number of subscriptions and checks the acl_file only when it
 * delivers, so one certificate could make it hold tens of thousands of filters (a probe: 60,000
 * took 200 MB); with the list a client holds at most as many as the list has.
 *
 * With plugin_opt_clustername_topics it also binds what a client says of itself to who it is: a
 * PUBLISH on a topic matching one of the listed filters (+ stands for one level) must carry the
 * CloudEvents "clustername" extension in binary mode (the MQTT user property ce-clustername),
 * equal to the client's username, and no other value of it; a structured event (content type
 * application/cloudevents...) is refused there, since its attributes are in a payload the broker
 * does not read:
 *
 *   plugin_opt_clustername_topics sources/maestro/consumers/+/agentevents
 *
 * Maestro's server takes the management cluster a status event speaks for from that extension,
 * never from the topic it came on, so without this any client that may publish on its own status
 * topic could speak for another management cluster (a probe: an agent of one stamp, or any
 * workload certificate, changed another cluster's status, and ARM showed a forged api.url).
 *
 * Every other check is deferred to the next handler (the acl_file), unchanged. Written for
 * OpenHCP against mosquitto's public plugin headers (Debian's mosquitto-dev); built and cached by
 * hack/mosquitto-plugin.sh.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
#include <mqtt_protocol.h>

#define OPTION "shared_subscribers"
#define FILTERS_OPTION "subscribe_filters"
#define CLUSTERNAME_OPTION "clustername_topics"
#define CLUSTERNAME_PROPERTY "ce-clustername"
#define CLOUDEVENTS_MEDIA_PREFIX "application/cloudevents"
#define SHARE_PREFIX "$share/"

/* A comma-separated option's value, split in place. */
struct list {
	char *value;
	char **items;    /* pointers into value */
	int count;
};

struct guard {
	mosquitto_plugin_id_t *id;
	struct list names;   /* shared_subscribers */
	struct list filters; /* subscribe_filters; none: every filter is left to the acl_file */
	bool filtered;       /* subscribe_filters was given */
	struct list bound;   /* clustername_topics */
};

static bool listed(const struct guard *g, const char *username)
{
	if(username == NULL) return false;
	for(int i = 0; i < g->names.count; i++){
		if(strcmp(g->names.items[i], username) == 0) return true;
	}
	return false;
}

/* topic_level reports whether username can stand for one topic level as it is: not empty, and
 * free of the wildcards + and # and of the level separator /. Another username would widen a
 * filter that %u stands in (a username "+" makes every consumer's topic its own). */
static bool topic_level(const char *username)
{
	return username != NULL && username[0] != '\0' && strpbrk(username, "+#/") == NULL;
}

/* matches reports whether topic is filter, with each %u in filter standing for username; a
 * filter holding %u matches nothing for a username that is not one topic level. */
static bool matches(const char *filter, const char *topic, const char *username)
{
	while(*filter){
		if(filter[0] == '%' && filter[1] == 'u'){
			if(!topic_level(username)) return false;
			size_t n = strlen(username);
			if(strncmp(topic, username, n) != 0) return false;
			topic += n;
			filter += 2;
			continue;
		}
		if(*filter != *topic) return false;
		filter++;
		topic++;
	}
	return *topic == '\0';
}

/* topic_matches reports whether topic matches filter, where a + level stands for any one level. */
static bool topic_matches(const char *filter, const char *topic)
{
	while(*filter){
		if(filter[0] == '+' && (filter[1] == '/' || filter[1] == '\0')){
			while(*topic && *topic != '/') topic++;
			filter++;
			continue;
		}
		if(*filter != *topic) return false;
		filter++;
		topic++;
	}
	return *topic == '\0';
}

/* clustername_problem is why a PUBLISH with these properties may not come from username, or NULL:
 * binary mode, at least one ce-clustername, and every one of them (in any letter case) username. */
static const char *clustername_problem(const mosquitto_property *props, const char *username)
{
	if(!topic_level(username)) return "the client's username is not one topic level";
	char *ct = NULL;
	if(mosquitto_property_read_string(props, MQTT_PROP_CONTENT_TYPE, &ct, false) != NULL){
		bool structured = strncasecmp(ct, CLOUDEVENTS_MEDIA_PREFIX, strlen(CLOUDEVENTS_MEDIA_PREFIX)) == 0;
		free(ct);
		if(structured) return "a structured event (its attributes are in the payload)";
	}
	int found = 0;
	bool other = false;
	char *name = NULL, *value = NULL;
	const mosquitto_property *p = mosquitto_property_read_string_pair(props, MQTT_PROP_USER_PROPERTY, &name, &value, false);
	while(p != NULL){
		if(strcasecmp(name, CLUSTERNAME_PROPERTY) == 0){
			if(strcmp(name, CLUSTERNAME_PROPERTY) == 0 && strcmp(value, username) == 0){
				found++;
			}else{
				other = true;
			}
		}
		free(name);
		free(value);
		name = value = NULL;
		p = mosquitto_property_read_string_pair(p, MQTT_PROP_USER_PROPERTY, &name, &value, true);
	}
	if(other) return "its clustername is not the client's username";
	if(found == 0) return "it carries no clustername";
	return NULL;
}

static int on_message(int event, void *event_data, void *userdata)
{
	struct mosquitto_evt_message *ed = event_data;
	const struct guard *g = userdata;
	(void)event;

	bool bound = false;
	for(int i = 0; i < g->bound.count && !bound; i++){
		bound = topic_matches(g->bound.items[i], ed->topic);
	}
	if(!bound) return MOSQ_ERR_SUCCESS;
	const char *username = mosquitto_client_username(ed->client);
	const char *why = clustername_problem(ed->properties, username);
	if(why != NULL){
		mosquitto_log_printf(MOSQ_LOG_NOTICE, "share_guard: refused a publish on %s by client %s (username %s): %s",
				ed->topic, mosquitto_client_id(ed->client), username ? username : "(none)", why);
		return MOSQ_ERR_ACL_DENIED;
	}
	return MOSQ_ERR_SUCCESS;
}

static bool allowed_filter(const struct guard *g, const char *topic, const char *username)
{
	for(int i = 0; i < g->filters.count; i++){
		if(matches(g->filters.items[i], topic, username)) return true;
	}
	return false;
}

static int on_acl_check(int event, void *event_data, void *userdata)
{
	const struct mosquitto_evt_acl_check *ed = event_data;
	const struct guard *g = userdata;
	(void)event;

	if(ed->access != MOSQ_ACL_SUBSCRIBE) return MOSQ_ERR_PLUGIN_DEFER;
	const char *username = mosquitto_client_username(ed->client);
	if(strncmp(ed->topic, SHARE_PREFIX, strlen(SHARE_PREFIX)) == 0 && !listed(g, username)){
		mosquitto_log_printf(MOSQ_LOG_NOTICE, "share_guard: refused shared subscription %s to client %s (username %s)",
				ed->topic, mosquitto_client_id(ed->client), username ? username : "(none)");
		return MOSQ_ERR_ACL_DENIED;
	}
	if(g->filtered && !allowed_filter(g, ed->topic, username)){
		mosquitto_log_printf(MOSQ_LOG_NOTICE, "share_guard: refused subscription %s to client %s (username %s): not a listed filter",
				ed->topic, mosquitto_client_id(ed->client), username ? username : "(none)");
		return MOSQ_ERR_ACL_DENIED;
	}
	return MOSQ_ERR_PLUGIN_DEFER;
}

static void guard_free(struct guard *g)
{
	if(g == NULL) return;
	free(g->names.items);
	free(g->names.value);
	free(g->filters.items);
	free(g->filters.value);
	free(g->bound.items);
	free(g->bound.value);
	free(g);
}

/* split splits value (copied) at its commas into l, skipping empty items. */
static int split(struct list *l, const char *value)
{
	free(l->items);
	free(l->value);
	l->items = NULL;
	l->count = 0;
	l->value = strdup(value);
	if(l->value == NULL) return MOSQ_ERR_NOMEM;
	int commas = 0;
	for(const char *p = l->value; *p; p++) if(*p == ',') commas++;
	l->items = calloc((size_t)commas + 1, sizeof(char *));
	if(l->items == NULL) return MOSQ_ERR_NOMEM;
	char *save = NULL;
	for(char *tok = strtok_r(l->value, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)){
		if(*tok != '\0') l->items[l->count++] = tok;
	}
	return MOSQ_ERR_SUCCESS;
}

int mosquitto_plugin_version(int supported_version_count, const int *supported_versions)
{
	for(int i = 0; i < supported_version_count; i++){
		if(supported_versions[i] == 5) return 5;
	}
	return -1;
}

int mosquitto_plugin_init(mosquitto_plugin_id_t *identifier, void **userdata, struct mosquitto_opt *options, int option_count)
{
	struct guard *g = calloc(1, sizeof(*g));
	if(g == NULL) return MOSQ_ERR_NOMEM;
	g->id = identifier;
	for(int i = 0; i < option_count; i++){
		int rc = MOSQ_ERR_SUCCESS;
		if(strcmp(options[i].key, OPTION) == 0){
			rc = split(&g->names, options[i].value);
		}else if(strcmp(options[i].key, FILTERS_OPTION) == 0){
			rc = split(&g->filters, options[i].value);
			g->filtered = true;
		}else if(strcmp(options[i].key, CLUSTERNAME_OPTION) == 0){
			rc = split(&g->bound, options[i].value);
		}
		if(rc != MOSQ_ERR_SUCCESS){
			guard_free(g);
			return rc;
		}
	}
	mosquitto_log_printf(MOSQ_LOG_INFO, "share_guard: %d client(s) may make shared subscriptions", g->names.count);
	if(g->filtered){
		mosquitto_log_printf(MOSQ_LOG_INFO, "share_guard: %d subscription filter(s) allowed", g->filters.count);
	}
	int rc = mosquitto_callback_register(identifier, MOSQ_EVT_ACL_CHECK, on_acl_check, NULL, g);
	if(rc != MOSQ_ERR_SUCCESS){
		guard_free(g);
		return rc;
	}
	if(g->bound.count > 0){
		mosquitto_log_printf(MOSQ_LOG_INFO, "share_guard: %d topic filter(s) bound to the publisher's clustername", g->bound.count);
		rc = mosquitto_callback_register(identifier, MOSQ_EVT_MESSAGE, on_message, NULL, g);
		if(rc != MOSQ_ERR_SUCCESS){
			mosquitto_callback_unregister(identifier, MOSQ_EVT_ACL_CHECK, on_acl_check, NULL);
			guard_free(g);
			return rc;
		}
	}
	*userdata = g;
	return MOSQ_ERR_SUCCESS;
}

int mosquitto_plugin_cleanup(void *userdata, struct mosquitto_opt *options, int option_count)
{
	struct guard *g = userdata;
	(void)options;
	(void)option_count;
	if(g != NULL){
		mosquitto_callback_unregister(g->id, MOSQ_EVT_ACL_CHECK, on_acl_check, NULL);
		if(g->bound.count > 0) mosquitto_callback_unregister(g->id, MOSQ_EVT_MESSAGE, on_message, NULL);
		guard_free(g);
	}
	return MOSQ_ERR_SUCCESS;
}
