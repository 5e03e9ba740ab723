package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Database is how a target reaches the database (x-lab.database).
type Database struct {
	URLEnv          string // the environment variable with the database's URL
	PoolEnv         string // the environment variable that sets the pool's size
	ApplicationName string // template: "{target}" and "{pid}" are filled in
	Timeout         time.Duration
}

// AppName fills in the application_name template for a target and a worker's pid.
func (d Database) AppName(target string, pid int) string {
	return strings.NewReplacer("{target}", target, "{pid}", fmt.Sprint(pid)).Replace(d.ApplicationName)
}

// Database reads x-lab.database.
func (c *Contract) Database() (Database, error) {
	raw, err := json.Marshal(c.Ext["database"])
	if err != nil {
		return Database{}, err
	}
	var doc struct {
		URLEnv   string  `json:"url-env"`
		PoolEnv  string  `json:"pool-env"`
		AppName  string  `json:"application-name"`
		TimeoutS float64 `json:"timeout-s"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Database{}, fmt.Errorf("contract: x-lab.database: %w", err)
	}
	if doc.URLEnv == "" || doc.PoolEnv == "" || doc.AppName == "" || doc.TimeoutS <= 0 {
		return Database{}, errors.New("contract: x-lab.database needs url-env, pool-env, application-name and timeout-s")
	}
	return Database{
		URLEnv: doc.URLEnv, PoolEnv: doc.PoolEnv, ApplicationName: doc.AppName,
		Timeout: time.Duration(doc.TimeoutS * float64(time.Second)),
	}, nil
}

// DBVector is one /db-rows test vector: the first ids read and the checksum of n rows.
type DBVector struct {
	N        int     `json:"n"`
	Seed     uint64  `json:"seed"`
	IDs      []int64 `json:"ids"`
	Checksum int64   `json:"checksum"`
}

// DBVectors reads the test vectors file the contract points to (x-lab.db-test-vectors).
func (c *Contract) DBVectors() ([]DBVector, error) {
	return readVectors[DBVector](c, "db-test-vectors")
}
