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
 * Every other check is deferred to the next handler (the acl_file), unchanged. Written for
 * OpenHCP against mosquitto's public plugin headers (Debian's mosquitto-dev); built and cached by
 * hack/mosquitto-plugin.sh.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>

#define OPTION "shared_subscribers"
#define SHARE_PREFIX "$share/"

struct guard {
	mosquitto_plugin_id_t *id;
	char *list;      /* the option's value, split in place at the commas */
	char **names;    /* pointers into list */
	int count;
};

static bool listed(const struct guard *g, const char *username)
{
	if(username == NULL) return false;
	for(int i = 0; i < g->count; i++){
		if(strcmp(g->names[i], username) == 0) return true;
	}
	return false;
}

static int on_acl_check(int event, void *event_data, void *userdata)
{
	const struct mosquitto_evt_acl_check *ed = event_data;
	const struct guard *g = userdata;
	(void)event;

	if(ed->access != MOSQ_ACL_SUBSCRIBE) return MOSQ_ERR_PLUGIN_DEFER;
	if(strncmp(ed->topic, SHARE_PREFIX, strlen(SHARE_PREFIX)) != 0) return MOSQ_ERR_PLUGIN_DEFER;
	const char *username = mosquitto_client_username(ed->client);
	if(listed(g, username)) return MOSQ_ERR_PLUGIN_DEFER;
	mosquitto_log_printf(MOSQ_LOG_NOTICE, "share_guard: refused shared subscription %s to client %s (username %s)",
			ed->topic, mosquitto_client_id(ed->client), username ? username : "(none)");
	return MOSQ_ERR_ACL_DENIED;
}

static void guard_free(struct guard *g)
{
	if(g == NULL) return;
	free(g->names);
	free(g->list);
	free(g);
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
		if(strcmp(options[i].key, OPTION) != 0) continue;
		free(g->list);
		g->list = strdup(options[i].value);
		if(g->list == NULL){
			guard_free(g);
			return MOSQ_ERR_NOMEM;
		}
	}
	if(g->list != NULL){
		int commas = 0;
		for(const char *p = g->list; *p; p++) if(*p == ',') commas++;
		g->names = calloc((size_t)commas + 1, sizeof(char *));
		if(g->names == NULL){
			guard_free(g);
			return MOSQ_ERR_NOMEM;
		}
		char *save = NULL;
		for(char *tok = strtok_r(g->list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)){
			if(*tok != '\0') g->names[g->count++] = tok;
		}
	}
	mosquitto_log_printf(MOSQ_LOG_INFO, "share_guard: %d client(s) may make shared subscriptions", g->count);
	int rc = mosquitto_callback_register(identifier, MOSQ_EVT_ACL_CHECK, on_acl_check, NULL, g);
	if(rc != MOSQ_ERR_SUCCESS){
		guard_free(g);
		return rc;
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
		guard_free(g);
	}
	return MOSQ_ERR_SUCCESS;
}
